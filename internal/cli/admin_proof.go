package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// printProof summarises a consensus-log-proof/v1 for a terminal: the leaf,
// where it is in the log and what signed the checkpoint. The bundle itself
// is what --output json prints, for a verifier.
func printProof(w io.Writer, raw json.RawMessage) error {
	var p struct {
		Leaf struct {
			AgreementID string `json:"agreementId"`
			Revision    int    `json:"revision"`
			Seq         *int64 `json:"seq"`
			Digest      string `json:"digest"`
			At          string `json:"at"`
		} `json:"leaf"`
		LeafIndex  int64  `json:"leafIndex"`
		Checkpoint string `json:"checkpoint"`
		LogKey     string `json:"logKey"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	text, sigs, _ := strings.Cut(p.Checkpoint, "\n\n")
	lines := strings.Split(text, "\n")
	if len(lines) < 3 {
		return errors.New("the proof's checkpoint is not a signed checkpoint")
	}
	var signers []string
	for _, l := range strings.Split(strings.TrimSuffix(sigs, "\n"), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "—" {
			signers = append(signers, f[1])
		}
	}
	var events int64
	if p.Leaf.Seq != nil {
		events = *p.Leaf.Seq
	}
	tw := newTable(w)
	fmt.Fprintf(tw, "agreement\t%s\n", p.Leaf.AgreementID)
	fmt.Fprintf(tw, "record\tSHA-256 %s, revision %d, %d events, issued %s\n", p.Leaf.Digest, p.Leaf.Revision, events, p.Leaf.At)
	fmt.Fprintf(tw, "leaf\t%d of the %s leaves of %s\n", p.LeafIndex, lines[1], lines[0])
	fmt.Fprintf(tw, "root\t%s\n", lines[2])
	fmt.Fprintf(tw, "signed by\t%s\n", strings.Join(signers, ", "))
	fmt.Fprintf(tw, "log key\t%s\n", p.LogKey)
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\nSave the bundle with --output json and check it: consensus verify record RECORD.json --keys KEYS.json --proof PROOF.json")
	return err
}

// withProofHint explains proof-not-ready: the log integrates about every
// second, so asking again soon succeeds.
func withProofHint(err error) error {
	var p *ProblemError
	if errors.As(err, &p) && p.Code == "proof-not-ready" {
		p.Hint = "the transparency log integrates new records about every second: run the command again"
	}
	return err
}
