package reply

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/mail"
	"net/textproto"
	"regexp"
	"strings"
	"sync"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/consensus-md/consensus/internal/record"
)

// LookupTXT answers a DNS TXT query: one string per record.
type LookupTXT func(name string) ([]string, error)

// ErrUnauthenticated: the reply does not prove it came from the invited
// address (no DKIM signature that verifies and aligns, or another From).
var ErrUnauthenticated = errors.New("reply: not signed by the invited address's domain")

// Authenticate checks that raw comes from invited: its From is invited
// and a DKIM signature verifies (looked up through lookup) whose d= aligns
// with invited's domain. It returns the evidence the record keeps, checked
// again offline (record.Evidence.Check) before it is returned, so what is
// stored is what a third party can re-check. Any failure is
// ErrUnauthenticated, wrapped with the reason.
func Authenticate(raw []byte, invited string, lookup LookupTXT) (*record.Evidence, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrUnauthenticated}, args...)...)
	}
	fields, err := headerFields(raw)
	if err != nil {
		return nil, fail("header: %v", err)
	}
	from, err := singleFrom(fields)
	if err != nil {
		return nil, fail("%v", err)
	}
	if !strings.EqualFold(from, invited) {
		return nil, fail("From is not the invited address")
	}
	_, domain, _ := strings.Cut(strings.ToLower(invited), "@")

	var mu sync.Mutex
	keys := map[string][]string{}
	recording := func(name string) ([]string, error) {
		txt, err := lookup(name)
		mu.Lock()
		keys[strings.ToLower(strings.TrimSuffix(name, "."))] = txt
		mu.Unlock()
		return txt, err
	}
	verifications, err := dkim.VerifyWithOptions(bytes.NewReader(raw), &dkim.VerifyOptions{LookupTXT: recording, MaxVerifications: 5})
	if err != nil && !errors.Is(err, dkim.ErrTooManySignatures) {
		return nil, fail("%v", err)
	}
	sigs := signatureFields(fields)
	for i, v := range verifications {
		if v.Err != nil || i >= len(sigs) || !record.Aligned(v.Domain, domain) {
			continue
		}
		ev, err := evidenceOf(raw, fields, sigs[i], from, keys)
		if err != nil {
			continue
		}
		return ev, nil
	}
	return nil, fail("no DKIM signature verifies and aligns with %s", domain)
}

// evidenceOf builds the evidence of the signature field sig, which
// go-msgauth verified, and checks it offline.
func evidenceOf(raw []byte, fields []string, sig, from string, keys map[string][]string) (*record.Evidence, error) {
	_, value, _ := strings.Cut(sig, ":")
	tags := tagList(value)
	headerCanon := strings.ToLower(strings.SplitN(tags["c"], "/", 2)[0])
	relaxed := headerCanon == "relaxed"
	var signed strings.Builder
	picked := map[string]int{}
	for _, name := range strings.Split(tags["h"], ":") {
		name = strings.ToLower(strings.TrimSpace(name))
		f := pick(fields, name, picked)
		if f == "" {
			continue
		}
		signed.WriteString(canonicalField(f, relaxed))
	}
	signed.WriteString(strings.TrimRight(canonicalField(emptyB(sig), relaxed), "\r\n"))
	txt := keys[strings.ToLower(tags["s"]+"._domainkey."+tags["d"])]
	if len(txt) != 1 {
		return nil, errors.New("reply: no single key record was fetched")
	}
	h := sha256.Sum256(raw)
	msgID := ""
	if f := pick(fields, "message-id", map[string]int{}); f != "" {
		_, v, _ := strings.Cut(f, ":")
		msgID = strings.TrimSpace(unfoldField(v))
	}
	ev := &record.Evidence{
		Kind: record.EvidenceKind, MessageID: msgID, RawSHA256: hex.EncodeToString(h[:]), From: strings.ToLower(from),
		DKIM: record.DKIMEvidence{
			Result: "pass", Domain: strings.ToLower(tags["d"]), Selector: tags["s"], Algorithm: strings.ToLower(tags["a"]),
			BodyHash: tags["bh"], Signature: tags["b"], SignedHeaders: signed.String(), KeyRecord: txt[0],
		},
	}
	if err := ev.Check(); err != nil {
		return nil, err
	}
	return ev, nil
}

// headerFields reads the header of raw as fields, each with its folded
// continuation lines and a final CRLF, in order.
func headerFields(raw []byte) ([]string, error) {
	r := textproto.NewReader(bufio.NewReader(bytes.NewReader(raw)))
	var h []string
	for {
		l, err := r.ReadLine()
		if err != nil {
			return nil, err
		}
		if l == "" {
			return h, nil
		}
		if len(h) > 0 && (l[0] == ' ' || l[0] == '\t') {
			h[len(h)-1] += l + "\r\n"
		} else {
			h = append(h, l+"\r\n")
		}
	}
}

func fieldName(f string) string {
	n, _, _ := strings.Cut(f, ":")
	return strings.ToLower(strings.TrimSpace(n))
}

// pick returns the next instance of name from the bottom of the header,
// as DKIM selects repeated fields.
func pick(fields []string, name string, picked map[string]int) string {
	skip := picked[name]
	for i := len(fields) - 1; i >= 0; i-- {
		if fieldName(fields[i]) != name {
			continue
		}
		if skip == 0 {
			picked[name]++
			return fields[i]
		}
		skip--
	}
	return ""
}

func signatureFields(fields []string) []string {
	var out []string
	for _, f := range fields {
		if fieldName(f) == "dkim-signature" {
			out = append(out, f)
		}
	}
	return out
}

// singleFrom is the address of the one From field, which must name one
// mailbox.
func singleFrom(fields []string) (string, error) {
	var from []string
	for _, f := range fields {
		if fieldName(f) == "from" {
			from = append(from, f)
		}
	}
	if len(from) != 1 {
		return "", errors.New("the message must have exactly one From field")
	}
	_, v, _ := strings.Cut(from[0], ":")
	list, err := mail.ParseAddressList(strings.TrimSpace(unfoldField(v)))
	if err != nil || len(list) != 1 {
		return "", errors.New("From must name exactly one address")
	}
	return list[0].Address, nil
}

// canonicalField is DKIM's simple (as is) or relaxed header
// canonicalization of one field.
func canonicalField(f string, relaxed bool) string {
	if !relaxed {
		return f
	}
	k, v, _ := strings.Cut(f, ":")
	v = strings.Join(strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }), " ")
	return strings.ToLower(strings.TrimSpace(k)) + ":" + v + "\r\n"
}

var bValue = regexp.MustCompile(`(b\s*=)[^;]+`)

// emptyB is the signature field with the value of its b= tag removed.
func emptyB(f string) string { return bValue.ReplaceAllString(f, "$1") }

func unfoldField(s string) string { return strings.NewReplacer("\r\n", "", "\n", "").Replace(s) }

// tagList reads a DKIM tag=value list, whitespace removed from values.
func tagList(s string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(unfoldField(s), ";") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		out[strings.TrimSpace(k)] = strings.Join(strings.Fields(v), "")
	}
	return out
}
