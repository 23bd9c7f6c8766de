package record

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"strings"

	"github.com/consensus-md/consensus/internal/room"
)

// EvidenceKind is the kind of evidence of an event read from a reply email.
const EvidenceKind = "dkim-reply"

// Evidence proves that an event was read from a reply to the invitation
// email, signed by the sending domain with DKIM. It is an optional member
// of a record's event, present only on such events.
//
// Offline, anyone can re-check with Check: that Signature is the signer's
// RSA or Ed25519 signature, under the key in KeyRecord, over SignedHeaders
// (the exact canonicalized header fields DKIM hashes, the DKIM-Signature
// field last with b= emptied); that this last field names Domain, Selector,
// Algorithm and BodyHash; that a signed From field is From; and that
// Domain aligns with From's domain. Given the raw message, RawSHA256 ties
// it to these bytes (CheckRaw). What cannot be re-checked offline: that
// KeyRecord was the DNS record published at Selector._domainkey.Domain when
// the reply arrived (the service fetched it then), and, without the raw
// message, that BodyHash is the hash of the body the command was read from.
type Evidence struct {
	Kind      string       `json:"kind"`
	MessageID string       `json:"message_id"`
	RawSHA256 string       `json:"raw_sha256"`
	From      string       `json:"from"`
	DKIM      DKIMEvidence `json:"dkim"`
}

// DKIMEvidence is the DKIM signature the reply was accepted on.
type DKIMEvidence struct {
	Result        string `json:"result"`
	Domain        string `json:"domain"`
	Selector      string `json:"selector"`
	Algorithm     string `json:"algorithm"`
	BodyHash      string `json:"body_hash"`
	Signature     string `json:"signature"`
	SignedHeaders string `json:"signed_headers"`
	KeyRecord     string `json:"key_record"`
}

// Check re-checks e offline as its doc says; the error says what fails.
func (e Evidence) Check() error {
	d := e.DKIM
	switch {
	case e.Kind != EvidenceKind:
		return fmt.Errorf("evidence kind is %q, want %q", e.Kind, EvidenceKind)
	case d.Result != "pass":
		return fmt.Errorf("evidence DKIM result is %q, want pass", d.Result)
	case len(e.RawSHA256) != 64 || strings.ToLower(e.RawSHA256) != e.RawSHA256:
		return errors.New("evidence raw_sha256 is not 64 lowercase hex characters")
	}
	if _, err := hex.DecodeString(e.RawSHA256); err != nil {
		return errors.New("evidence raw_sha256 is not hex")
	}
	fields := splitFields(d.SignedHeaders)
	if len(fields) == 0 {
		return errors.New("evidence signed_headers is empty")
	}
	name, value, _ := strings.Cut(fields[len(fields)-1], ":")
	if !strings.EqualFold(strings.TrimSpace(name), "dkim-signature") {
		return errors.New("evidence signed_headers does not end with the DKIM-Signature field")
	}
	tags := dkimTags(value)
	for _, want := range [][2]string{{"d", d.Domain}, {"s", d.Selector}, {"a", d.Algorithm}, {"bh", d.BodyHash}, {"b", ""}} {
		got, ok := tags[want[0]]
		same := got == want[1] || want[0] != "bh" && strings.EqualFold(got, want[1])
		if !ok || !same {
			return fmt.Errorf("evidence DKIM-Signature tag %s= does not match the evidence", want[0])
		}
	}
	if _, ok := tags["l"]; ok {
		return errors.New("evidence DKIM-Signature has a body length tag (l=): part of the body is unsigned")
	}
	from := ""
	for _, f := range fields[:len(fields)-1] {
		if n, v, _ := strings.Cut(f, ":"); strings.EqualFold(strings.TrimSpace(n), "from") {
			a, err := mail.ParseAddress(strings.TrimSpace(unfold(v)))
			if err != nil {
				return errors.New("evidence signed From field does not parse")
			}
			from = strings.ToLower(a.Address)
		}
	}
	if from == "" || from != strings.ToLower(e.From) {
		return errors.New("evidence From is not the signed From field")
	}
	_, fromDomain, _ := strings.Cut(from, "@")
	if !Aligned(d.Domain, fromDomain) {
		return fmt.Errorf("evidence DKIM domain %q does not align with the From domain %q", d.Domain, fromDomain)
	}
	sig, err := base64.StdEncoding.DecodeString(stripSpace(d.Signature))
	if err != nil || len(sig) == 0 {
		return errors.New("evidence DKIM signature is not base64")
	}
	hashed := sha256.Sum256([]byte(d.SignedHeaders))
	key, keyAlg, err := parseKeyRecord(d.KeyRecord)
	if err != nil {
		return err
	}
	switch {
	case d.Algorithm == "rsa-sha256" && keyAlg == "rsa":
		if rsa.VerifyPKCS1v15(key.(*rsa.PublicKey), crypto.SHA256, hashed[:], sig) != nil {
			return errors.New("evidence DKIM signature does not verify")
		}
	case d.Algorithm == "ed25519-sha256" && keyAlg == "ed25519":
		if !ed25519.Verify(key.(ed25519.PublicKey), hashed[:], sig) {
			return errors.New("evidence DKIM signature does not verify")
		}
	default:
		return fmt.Errorf("evidence DKIM algorithm %q does not fit the key record (k=%s)", d.Algorithm, keyAlg)
	}
	return nil
}

// CheckRaw reports whether raw is the message e was read from.
func (e Evidence) CheckRaw(raw []byte) error {
	h := sha256.Sum256(raw)
	if hex.EncodeToString(h[:]) != e.RawSHA256 {
		return errors.New("the message's SHA-256 is not the evidence's raw_sha256")
	}
	return nil
}

// Aligned reports relaxed alignment of a DKIM signing domain with an
// address's domain: equal, or one a parent of the other at a label
// boundary (a.example.org and example.org), compared without case. This
// stands in for DMARC's "same organizational domain" without a public
// suffix list, so it refuses two sibling subdomains but accepts a signer
// that is a public suffix of the address; the second is what a
// suffix-list check would add.
func Aligned(signer, domain string) bool {
	s, d := strings.ToLower(strings.TrimSuffix(signer, ".")), strings.ToLower(strings.TrimSuffix(domain, "."))
	if s == "" || d == "" || !strings.Contains(s, ".") || !strings.Contains(d, ".") {
		return false
	}
	return s == d || strings.HasSuffix(s, "."+d) || strings.HasSuffix(d, "."+s)
}

// splitFields splits canonicalized header bytes into fields: a line break
// followed by a space or tab continues the field.
func splitFields(s string) []string {
	var out []string
	for len(s) > 0 {
		end := 0
		for {
			i := strings.Index(s[end:], "\r\n")
			if i < 0 {
				end = len(s)
				break
			}
			end += i + 2
			if end >= len(s) || (s[end] != ' ' && s[end] != '\t') {
				break
			}
		}
		out = append(out, strings.TrimSuffix(s[:end], "\r\n"))
		s = s[end:]
	}
	return out
}

func unfold(s string) string { return strings.NewReplacer("\r\n", "", "\n", "").Replace(s) }

func stripSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
			return -1
		}
		return r
	}, s)
}

// dkimTags parses a tag=value list, whitespace removed from each value.
func dkimTags(s string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		out[strings.TrimSpace(stripSpace(k))] = stripSpace(v)
	}
	return out
}

// parseKeyRecord reads a DKIM key record: the public key and its k= type.
func parseKeyRecord(rec string) (any, string, error) {
	tags := dkimTags(rec)
	if v, ok := tags["v"]; ok && v != "DKIM1" {
		return nil, "", errors.New("evidence key record is not v=DKIM1")
	}
	raw, err := base64.StdEncoding.DecodeString(tags["p"])
	if err != nil || len(raw) == 0 {
		return nil, "", errors.New("evidence key record has no usable p= key")
	}
	switch k := tags["k"]; k {
	case "", "rsa":
		pub, err := x509.ParsePKIXPublicKey(raw)
		if err != nil {
			if pub, err = x509.ParsePKCS1PublicKey(raw); err != nil {
				return nil, "", errors.New("evidence key record p= is not an RSA public key")
			}
		}
		rk, ok := pub.(*rsa.PublicKey)
		if !ok {
			return nil, "", errors.New("evidence key record p= is not an RSA public key")
		}
		return rk, "rsa", nil
	case "ed25519":
		if len(raw) != ed25519.PublicKeySize {
			return nil, "", errors.New("evidence key record p= is not an Ed25519 public key")
		}
		return ed25519.PublicKey(raw), "ed25519", nil
	default:
		return nil, "", fmt.Errorf("evidence key record has an unknown key type k=%s", k)
	}
}

// ReplyEvidence parses evidence (the canonical JSON of an Evidence, as an
// event stores it) into what CONSENSUS.md states of it; nil for none.
func ReplyEvidence(evidence string) (*room.ReplyEvidence, error) {
	if evidence == "" {
		return nil, nil
	}
	var e Evidence
	if err := json.Unmarshal([]byte(evidence), &e); err != nil {
		return nil, fmt.Errorf("record: a decision's reply evidence: %w", err)
	}
	return &room.ReplyEvidence{From: e.From, DKIMDomain: e.DKIM.Domain, DKIMSelector: e.DKIM.Selector, MessageID: e.MessageID, RawSHA256: e.RawSHA256}, nil
}
