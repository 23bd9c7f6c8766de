package envelope_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/envelope/envelopetest"
)

func envelopeSeeds(t testing.TB) [][]byte {
	valid := envelopetest.Valid(t)
	return [][]byte{
		valid,
		envelopetest.JSON(t, envelopetest.Map("https://evil.example")),
		envelopetest.JSON(t, envelopetest.Map("http://consensus.md")),
		envelopetest.Mutated(t, func(m map[string]any) { m["invitation_id"] = envelopetest.OtherID }),
		envelopetest.Mutated(t, func(m map[string]any) {
			m["invite_uri"] = envelope.DefaultOrigin + "/invite/" + envelopetest.InvitationID + "#token=" + envelopetest.Secret
		}),
		envelopetest.Mutated(t, func(m map[string]any) {
			m["invite_uri"] = envelope.DefaultOrigin + "/invite/" + envelopetest.InvitationID + "#secret=" + envelopetest.Secret + "&a=b"
		}),
		envelopetest.Mutated(t, func(m map[string]any) { delete(envelopetest.Sub(m, "agent_claim"), "email_proof") }),
		envelopetest.Mutated(t, func(m map[string]any) { m["version"] = 2 }),
		envelopetest.Mutated(t, func(m map[string]any) { m["extra"] = true }),
		bytes.Replace(valid, []byte(`"title": `), []byte(`"title": "a", "title": `), 1),
		[]byte(`{"schema": `),
		[]byte(`{}`),
		[]byte(`[`),
	}
}

func FuzzExtractBlock(f *testing.F) {
	valid := string(envelopetest.Valid(f))
	for _, s := range []string{
		envelopetest.Body(valid),
		strings.ReplaceAll(envelopetest.Body(valid), "\n", "\r\n"),
		envelopetest.Body(valid) + envelopetest.Body(valid),
		envelope.BeginMarker + "\n" + valid,
		envelope.EndMarker + "\n" + envelope.BeginMarker + "\n",
		" " + envelope.BeginMarker + "\n{}\n" + envelope.EndMarker,
		"",
		"no block here\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		block, err := envelope.ExtractBlock(body)
		if err != nil {
			var ce *envelope.CheckError
			if !errors.As(err, &ce) || ce.Check != envelope.CheckBlock {
				t.Fatalf("error is not a block CheckError: %v", err)
			}
			return
		}
		// The block sits in body right after a BEGIN line and is followed by
		// an END line; it contains no marker line itself.
		i := bytes.Index(body, block)
		if i < 0 {
			t.Fatal("block is not part of body")
		}
		for _, line := range bytes.Split(block, []byte("\n")) {
			l := string(bytes.TrimSuffix(line, []byte("\r")))
			if l == envelope.BeginMarker || l == envelope.EndMarker {
				t.Fatal("block contains a marker line")
			}
		}
	})
}

func FuzzParseEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds(f) {
		f.Add(s, false)
	}
	f.Add(envelopetest.JSON(f, envelopetest.Map("http://127.0.0.1:8080")), true)
	f.Fuzz(func(t *testing.T, raw []byte, loopback bool) {
		p := envelope.Policy{}
		if loopback {
			p = envelope.Policy{Origin: "http://127.0.0.1:8080", AllowHTTPLoopback: true}
		}
		inv, err := envelope.Parse(raw, p)
		if err != nil {
			var ce *envelope.CheckError
			if !errors.As(err, &ce) {
				t.Fatalf("refusal is not a CheckError: %v", err)
			}
			// No error may quote a credential-shaped run found in the input.
			for _, c := range credentialCandidates(raw) {
				if strings.Contains(err.Error(), c) {
					t.Fatalf("error quotes input credential %q: %v", c, err)
				}
			}
			return
		}
		// Accepted: re-check the five rules independently of the package.
		origin := "https://consensus.md"
		if loopback {
			origin = "http://127.0.0.1:8080"
		}
		id := inv.InvitationID
		if inv.Envelope.InvitationID != id || !envelope.IsInvitationID(id) {
			t.Fatalf("bad invitation id %q", id)
		}
		if want := origin + "/invite/" + id + "#secret=" + inv.Secret; inv.Envelope.InviteURI != want {
			t.Fatalf("invite_uri %q, want %q", inv.Envelope.InviteURI, want)
		}
		if want := origin + "/api/v1/agent/invitations/" + id + "/exchange"; inv.ExchangeURL != want {
			t.Fatalf("exchange %q", inv.ExchangeURL)
		}
		if want := origin + "/api/v1/agent/invitations/" + id + "/claim"; inv.ClaimURL != want {
			t.Fatalf("claim %q", inv.ClaimURL)
		}
		if inv.Envelope.Docs != origin+"/llms.txt" {
			t.Fatalf("docs %q", inv.Envelope.Docs)
		}
		if b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(inv.Secret, "csi_")); err != nil || len(b) != 32 {
			t.Fatalf("secret not 32 base64url bytes")
		}
		if b, err := base64.RawURLEncoding.DecodeString(inv.EmailProof); err != nil || len(b) != 24 || inv.EmailProof != inv.Envelope.AgentClaim.EmailProof {
			t.Fatalf("proof not 24 base64url bytes from the envelope")
		}
		if inv.Envelope.Version != 1 {
			t.Fatalf("version %d", inv.Envelope.Version)
		}
	})
}

// credentialCandidates returns runs of 20+ base64url characters in raw: any
// secret or proof in the input is (part of) one of them.
func credentialCandidates(raw []byte) []string {
	var out []string
	start := -1
	isB64 := func(c byte) bool {
		return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	for i := 0; i <= len(raw); i++ {
		if i < len(raw) && isB64(raw[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start >= 20 {
			out = append(out, string(raw[start:i]))
		}
		start = -1
	}
	return out
}
