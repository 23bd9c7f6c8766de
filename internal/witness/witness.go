// Package witness is the log's side of C2SP tlog-witness: it names the
// witnesses a deployment asks (CONSENSUS_LOG_WITNESSES) and submits each
// new checkpoint to one with add-checkpoint and a consistency proof,
// returning the cosignature lines that verify under the witness's key.
package witness

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/translog"
)

// Witness is one configured witness: its tlog-cosignature/v1 key (whose
// name is the witness's name) and its submission prefix.
type Witness struct {
	Key note.Verifier
	URL string
}

// Name is the witness's name, as its key states it.
func (w Witness) Name() string { return w.Key.Name() }

// Parse reads CONSENSUS_LOG_WITNESSES: entries separated by commas or
// newlines, each a witness key (a signed-note verifier key,
// name+hash+base64, or NAME=base64 of its Ed25519 key) and the witness's
// submission URL, separated by spaces.
func Parse(s string) ([]Witness, error) {
	var out []Witness
	seen := map[string]bool{}
	for _, entry := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' }) {
		fields := strings.Fields(entry)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("witness %q: want its key and its URL, separated by a space", entry)
		}
		key, err := translog.WitnessKey(fields[0])
		if err != nil {
			return nil, err
		}
		u, err := url.Parse(fields[1])
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("witness %s: %q is not an http(s) URL", key.Name(), fields[1])
		}
		if seen[key.Name()] {
			return nil, fmt.Errorf("witness %s is named twice", key.Name())
		}
		seen[key.Name()] = true
		out = append(out, Witness{Key: key, URL: strings.TrimSuffix(u.String(), "/")})
	}
	return out, nil
}

// ConflictError: the witness holds another size than the request's old
// size (409 with its size), or the same size with another root (409
// without one; Known is -1).
type ConflictError struct{ Known int64 }

func (e *ConflictError) Error() string {
	if e.Known < 0 {
		return "the witness holds a checkpoint of this size with another root hash (409)"
	}
	return fmt.Sprintf("the witness holds size %d (409)", e.Known)
}

// RefusedError: the witness refused the checkpoint (403, 404, 400, 422):
// the log's signature, its origin, the request or the consistency proof
// did not pass its checks. Every refusal is an alert.
type RefusedError struct {
	Status int
	Body   string
}

func (e *RefusedError) Error() string {
	why := map[int]string{
		http.StatusForbidden:           "it does not trust the log's key",
		http.StatusNotFound:            "it does not know the log's origin",
		http.StatusBadRequest:          "it found the request malformed",
		http.StatusUnprocessableEntity: "the consistency proof does not verify against the checkpoint it holds",
	}[e.Status]
	if why == "" {
		why = "unexpected answer"
	}
	return fmt.Sprintf("the witness refused the checkpoint (%d: %s): %s", e.Status, why, strings.TrimSpace(e.Body))
}

// maxBody bounds what is read of a witness's answer.
const maxBody = 64 << 10

// AddCheckpoint submits the signed checkpoint to w with a consistency
// proof from old, the size the witness last cosigned, and returns the
// cosignature lines of w's key that verify on it. Any other answer is a
// *ConflictError, a *RefusedError, or an error for an unreachable or
// failing (5xx) witness.
func AddCheckpoint(ctx context.Context, c *http.Client, w Witness, old int64, proof tlog.TreeProof, signed []byte) ([]string, error) {
	var body bytes.Buffer
	fmt.Fprintf(&body, "old %d\n", old)
	for _, h := range proof {
		body.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	body.WriteString("\n")
	body.Write(signed)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL+"/add-checkpoint", &body)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("witness %s: %w", w.Name(), err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("witness %s: reading the answer: %w", w.Name(), err)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		return cosignatures(w, signed, answer)
	case resp.StatusCode == http.StatusConflict:
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/x.tlog.size") {
			n, err := strconv.ParseInt(strings.TrimSuffix(string(answer), "\n"), 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("witness %s: a 409 whose size %q does not parse", w.Name(), answer)
			}
			return nil, &ConflictError{Known: n}
		}
		return nil, &ConflictError{Known: -1}
	case resp.StatusCode >= 500:
		return nil, fmt.Errorf("witness %s: %s: %s", w.Name(), resp.Status, strings.TrimSpace(string(answer)))
	default:
		return nil, &RefusedError{Status: resp.StatusCode, Body: string(answer)}
	}
}

// cosignatures keeps the lines of the answer that are w's signatures and
// verify on the checkpoint; an answer with none is an error.
func cosignatures(w Witness, signed, answer []byte) ([]string, error) {
	var out []string
	for _, line := range strings.SplitAfter(string(answer), "\n") {
		if !strings.HasPrefix(line, "— ") || !strings.HasSuffix(line, "\n") {
			continue
		}
		n, err := note.Open(translog.AddSignatureLines(signed, line), note.VerifierList(w.Key))
		if err != nil {
			continue
		}
		for _, s := range n.Sigs {
			if s.Name == w.Key.Name() && s.Hash == w.Key.KeyHash() && strings.Contains(line, s.Base64) {
				out = append(out, line)
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("witness " + w.Name() + ": its answer holds no cosignature that verifies under its key")
	}
	return out, nil
}
