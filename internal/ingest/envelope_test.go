package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// Fixed sample values; the credentials are canonical base64url of 32 and 24
// bytes.
const (
	testInvitationID = "0b0e7c1e-3f0a-4c55-9a51-2f4f1c1d8e01"
	testOtherID      = "1b0e7c1e-3f0a-4c55-9a51-2f4f1c1d8e02"
	testAgreementID  = "6a1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d"
	testParticipant  = "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a"
	testSecretBody   = "q7Zr1LwXo9nB2cV4mK8pT0sYhE6uJ3aF5dG1iQ9xR2w"
	testSecret       = "csi_" + testSecretBody
	testProof        = "Pz8_mN4qW7eR1tY5uI9oA3sD6fG0hJ2k"
	testDigest       = "3f5a1c9e7b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d1f3a"
)

// envelopeMap returns a valid envelope for origin as a JSON object that a
// test can mutate before encoding.
func envelopeMap(origin string) map[string]any {
	return map[string]any{
		"schema":        origin + "/schemas/invitation-email/v1",
		"version":       1,
		"invitation_id": testInvitationID,
		"agreement_id":  testAgreementID,
		"participant":   map[string]any{"id": testParticipant, "kind": "agent", "display_name": "Buyer agent"},
		"inbox":         "buyer@agentmail.to",
		"title":         "Ship v2 on Friday",
		"deadline":      "2026-12-31T00:00:00Z",
		"expires_at":    "2026-12-31T00:00:00Z",
		"revision":      map[string]any{"number": 1, "digest": testDigest},
		"invite_uri":    origin + "/invite/" + testInvitationID + "#secret=" + testSecret,
		"agent_exchange": map[string]any{
			"method": "POST",
			"href":   origin + "/api/v1/agent/invitations/" + testInvitationID + "/exchange",
		},
		"agent_claim": map[string]any{
			"method":      "POST",
			"href":        origin + "/api/v1/agent/invitations/" + testInvitationID + "/claim",
			"email_proof": testProof,
		},
		"docs": origin + "/llms.txt",
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func validEnvelopeJSON(t testing.TB) []byte { return mustJSON(t, envelopeMap(DefaultOrigin)) }

func mutated(t testing.TB, f func(m map[string]any)) []byte {
	m := envelopeMap(DefaultOrigin)
	f(m)
	return mustJSON(t, m)
}

func sub(m map[string]any, key string) map[string]any { return m[key].(map[string]any) }

// assertNoLeak fails when s quotes either credential (or the secret's body).
func assertNoLeak(t testing.TB, s string) {
	t.Helper()
	for _, c := range []string{testSecret, testSecretBody, testProof} {
		if strings.Contains(s, c) {
			t.Fatalf("string leaks a credential: %q", s)
		}
	}
}

func wrapBlock(js string) string {
	return "Hello,\n\n" + BeginMarker + "\n" + js + "\n" + EndMarker + "\n\nBye\n"
}

func TestExtractBlock(t *testing.T) {
	t.Parallel()
	js := `{"a":1}`
	tests := []struct {
		name    string
		body    string
		want    string // expected block when ok
		wantErr bool
	}{
		{"lf", wrapBlock(js), js + "\n", false},
		{"crlf", strings.ReplaceAll(wrapBlock(js), "\n", "\r\n"), js + "\r\n", false},
		{"markers at the very ends", BeginMarker + "\n" + js + "\n" + EndMarker, js + "\n", false},
		{"empty block", BeginMarker + "\n" + EndMarker + "\n", "", false},
		{"none", "just a note\n", "", true},
		{"empty body", "", "", true},
		{"two blocks", wrapBlock(js) + wrapBlock(js), "", true},
		{"begin without end", "x\n" + BeginMarker + "\n" + js + "\n", "", true},
		{"end before begin", EndMarker + "\n" + BeginMarker + "\n" + js + "\n" + EndMarker + "\n", "", true},
		{"end only", js + "\n" + EndMarker + "\n", "", true},
		{"nested begin", BeginMarker + "\n" + BeginMarker + "\n" + js + "\n" + EndMarker + "\n", "", true},
		{"leading space on marker", " " + BeginMarker + "\n" + js + "\n" + EndMarker + "\n", "", true},
		{"trailing space on marker", BeginMarker + "\n" + js + "\n" + EndMarker + " \n", "", true},
		{"marker inside a line", "see " + BeginMarker + " here\n" + js + "\n" + EndMarker + "\n", "", true},
		{"quoted reply is not a block", "> " + BeginMarker + "\n> " + js + "\n> " + EndMarker + "\n", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ExtractBlock([]byte(tt.body))
			if tt.wantErr {
				var ce *CheckError
				if !errors.As(err, &ce) || ce.Check != CheckBlock {
					t.Fatalf("err = %v, want a %q CheckError", err, CheckBlock)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if string(got) != tt.want {
				t.Fatalf("block = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseEnvelopeValid(t *testing.T) {
	t.Parallel()
	inv, err := ParseEnvelope(validEnvelopeJSON(t), Policy{})
	if err != nil {
		t.Fatalf("ParseEnvelope: %v", err)
	}
	checks := []struct{ name, got, want string }{
		{"InvitationID", inv.InvitationID, testInvitationID},
		{"AgreementID", inv.AgreementID, testAgreementID},
		{"Origin", inv.Origin, DefaultOrigin},
		{"ExchangeURL", inv.ExchangeURL, DefaultOrigin + "/api/v1/agent/invitations/" + testInvitationID + "/exchange"},
		{"ClaimURL", inv.ClaimURL, DefaultOrigin + "/api/v1/agent/invitations/" + testInvitationID + "/claim"},
		{"Secret", inv.Secret, testSecret},
		{"EmailProof", inv.EmailProof, testProof},
		{"RevisionDigest", inv.RevisionDigest, testDigest},
		{"ParticipantID", inv.ParticipantID, testParticipant},
		{"Inbox", inv.Inbox, "buyer@agentmail.to"},
		{"Title", inv.Envelope.Title, "Ship v2 on Friday"},
		{"Kind", inv.Envelope.Participant.Kind, "agent"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if inv.RevisionNumber != 1 || inv.Envelope.Version != 1 {
		t.Errorf("revision %d version %d, want 1 and 1", inv.RevisionNumber, inv.Envelope.Version)
	}
	if inv.Envelope.Deadline.IsZero() {
		t.Error("deadline not decoded")
	}
}

func TestParseEnvelopeWithoutPrefix(t *testing.T) {
	t.Parallel()
	raw := mutated(t, func(m map[string]any) {
		m["invite_uri"] = DefaultOrigin + "/invite/" + testInvitationID + "#secret=" + testSecretBody
	})
	inv, err := ParseEnvelope(raw, Policy{})
	if err != nil {
		t.Fatalf("ParseEnvelope: %v", err)
	}
	if inv.Secret != testSecretBody {
		t.Fatalf("secret not the fragment value")
	}
}

func TestParseEnvelopeLoopbackHTTP(t *testing.T) {
	t.Parallel()
	const local = "http://127.0.0.1:8080"
	raw := mustJSON(t, envelopeMap(local))
	inv, err := ParseEnvelope(raw, Policy{Origin: local, AllowHTTPLoopback: true})
	if err != nil {
		t.Fatalf("loopback http with AllowHTTPLoopback: %v", err)
	}
	if inv.Origin != local {
		t.Fatalf("origin = %q", inv.Origin)
	}
	// Without the flag the policy itself is refused: no email can pass.
	if _, err := ParseEnvelope(raw, Policy{Origin: local}); err == nil {
		t.Fatal("http origin accepted without AllowHTTPLoopback")
	}
	// The flag is for loopback hosts only.
	if err := (Policy{Origin: "http://consensus.md", AllowHTTPLoopback: true}).Validate(); err == nil {
		t.Fatal("http on a public host accepted")
	}
	// An https envelope does not pass an http policy (exact origin).
	if _, err := ParseEnvelope(mustJSON(t, envelopeMap("https://127.0.0.1:8080")), Policy{Origin: local, AllowHTTPLoopback: true}); !isCheck(err, CheckOrigin) {
		t.Fatalf("scheme mismatch: err = %v, want origin", err)
	}
}

func TestPolicyValidate(t *testing.T) {
	t.Parallel()
	good := []Policy{{}, {Origin: "https://consensus.md"}, {Origin: "https://Example.COM:8443/"},
		{Origin: "http://localhost:3000", AllowHTTPLoopback: true}, {Origin: "http://[::1]:80", AllowHTTPLoopback: true}}
	for _, p := range good {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
	bad := []Policy{{Origin: "https://consensus.md/path"}, {Origin: "https://u@consensus.md"}, {Origin: "ftp://consensus.md"},
		{Origin: "https://consensus.md?q"}, {Origin: "consensus.md"}, {Origin: "http://127.0.0.2", AllowHTTPLoopback: true},
		{Origin: "https://consensus.md:99999"}}
	for _, p := range bad {
		if err := p.Validate(); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}

func isCheck(err error, check string) bool {
	var ce *CheckError
	return errors.As(err, &ce) && ce.Check == check
}

func TestParseEnvelopeRefusals(t *testing.T) {
	t.Parallel()
	const evil = "https://evil.example"
	tests := []struct {
		name  string
		raw   []byte
		check string
	}{
		// Checks 1 and 2: origin.
		{"invite_uri on another origin", mutated(t, func(m map[string]any) {
			m["invite_uri"] = evil + "/invite/" + testInvitationID + "#secret=" + testSecret
		}), CheckOrigin},
		{"whole envelope on another origin", mustJSON(t, envelopeMap(evil)), CheckOrigin},
		{"invite_uri over http", mustJSON(t, envelopeMap("http://consensus.md")), CheckOrigin},
		{"look-alike host", mutated(t, func(m map[string]any) {
			m["invite_uri"] = "https://consensus.md.evil.example/invite/" + testInvitationID + "#secret=" + testSecret
		}), CheckOrigin},
		{"explicit port", mutated(t, func(m map[string]any) {
			m["invite_uri"] = "https://consensus.md:443/invite/" + testInvitationID + "#secret=" + testSecret
		}), CheckOrigin},
		{"exchange href on another origin", mutated(t, func(m map[string]any) {
			sub(m, "agent_exchange")["href"] = evil + "/api/v1/agent/invitations/" + testInvitationID + "/exchange"
		}), CheckOrigin},
		{"exchange href over http", mutated(t, func(m map[string]any) {
			sub(m, "agent_exchange")["href"] = "http://consensus.md/api/v1/agent/invitations/" + testInvitationID + "/exchange"
		}), CheckOrigin},
		{"claim href on another origin", mutated(t, func(m map[string]any) {
			sub(m, "agent_claim")["href"] = evil + "/api/v1/agent/invitations/" + testInvitationID + "/claim"
		}), CheckOrigin},
		{"docs on another origin", mutated(t, func(m map[string]any) { m["docs"] = evil + "/llms.txt" }), CheckOrigin},
		// Check 3: one UUID.
		{"envelope id differs from invite path", mutated(t, func(m map[string]any) { m["invitation_id"] = testOtherID }), CheckUUID},
		{"invite path differs", mutated(t, func(m map[string]any) {
			m["invite_uri"] = DefaultOrigin + "/invite/" + testOtherID + "#secret=" + testSecret
		}), CheckUUID},
		{"exchange path differs", mutated(t, func(m map[string]any) {
			sub(m, "agent_exchange")["href"] = DefaultOrigin + "/api/v1/agent/invitations/" + testOtherID + "/exchange"
		}), CheckUUID},
		{"claim path differs", mutated(t, func(m map[string]any) {
			sub(m, "agent_claim")["href"] = DefaultOrigin + "/api/v1/agent/invitations/" + testOtherID + "/claim"
		}), CheckUUID},
		// Check 4: the fragment.
		{"fragment named token", mutated(t, func(m map[string]any) {
			m["invite_uri"] = DefaultOrigin + "/invite/" + testInvitationID + "#token=" + testSecret
		}), CheckFragment},
		{"extra fragment parameter", mutated(t, func(m map[string]any) {
			m["invite_uri"] = DefaultOrigin + "/invite/" + testInvitationID + "#secret=" + testSecret + "&next=x"
		}), CheckFragment},
		{"parameter before secret", mutated(t, func(m map[string]any) {
			m["invite_uri"] = DefaultOrigin + "/invite/" + testInvitationID + "#a=b&secret=" + testSecret
		}), CheckFragment},
		{"no fragment", mutated(t, func(m map[string]any) { m["invite_uri"] = DefaultOrigin + "/invite/" + testInvitationID }), CheckFragment},
		{"secret not base64url", mutated(t, func(m map[string]any) {
			m["invite_uri"] = DefaultOrigin + "/invite/" + testInvitationID + "#secret=csi_" + strings.Repeat("+", 43)
		}), CheckFragment},
		{"secret padded", mutated(t, func(m map[string]any) {
			m["invite_uri"] = DefaultOrigin + "/invite/" + testInvitationID + "#secret=" + testSecretBody + "="
		}), CheckFragment},
		{"secret too short", mutated(t, func(m map[string]any) {
			m["invite_uri"] = DefaultOrigin + "/invite/" + testInvitationID + "#secret=csi_abc"
		}), CheckFragment},
		{"secret non-canonical trailing bits", mutated(t, func(m map[string]any) {
			m["invite_uri"] = DefaultOrigin + "/invite/" + testInvitationID + "#secret=" + testSecretBody[:42] + "x"
		}), CheckFragment},
		// Check 5: the proof.
		{"missing proof", mutated(t, func(m map[string]any) { delete(sub(m, "agent_claim"), "email_proof") }), CheckProof},
		{"empty proof", mutated(t, func(m map[string]any) { sub(m, "agent_claim")["email_proof"] = "" }), CheckProof},
		{"malformed proof", mutated(t, func(m map[string]any) { sub(m, "agent_claim")["email_proof"] = testProof[:31] + "!" }), CheckProof},
		{"short proof", mutated(t, func(m map[string]any) { sub(m, "agent_claim")["email_proof"] = testProof[:20] }), CheckProof},
		// JSON.
		{"invalid JSON", []byte(`{"schema": `), CheckJSON},
		{"not an object", []byte(`[1,2]`), CheckJSON},
		{"empty", []byte(``), CheckJSON},
		{"two objects", append(validEnvelopeJSON(t), []byte(`{}`)...), CheckJSON},
		{"trailing garbage", append(validEnvelopeJSON(t), []byte(` x`)...), CheckJSON},
		{"duplicate key", bytes.Replace(validEnvelopeJSON(t), []byte(`"title": "Ship v2 on Friday",`),
			[]byte(`"title": "Ship v2 on Friday", "title": "Other",`), 1), CheckJSON},
		{"duplicate key escaped", bytes.Replace(validEnvelopeJSON(t), []byte(`"title": "Ship v2 on Friday",`),
			[]byte(`"title": "Ship v2 on Friday", "\u0074itle": "Other",`), 1), CheckJSON},
		{"duplicate nested key", bytes.Replace(validEnvelopeJSON(t), []byte(`"display_name": "Buyer agent",`),
			[]byte(`"display_name": "Buyer agent", "display_name": "Seller",`), 1), CheckJSON},
		{"invalid UTF-8", bytes.Replace(validEnvelopeJSON(t), []byte("Friday"), []byte("Fri\xffday"), 1), CheckJSON},
		// Schema.
		{"version 2", mutated(t, func(m map[string]any) { m["version"] = 2 }), CheckSchema},
		{"unknown field", mutated(t, func(m map[string]any) { m["callback"] = "https://consensus.md/x" }), CheckSchema},
		{"unknown nested field", mutated(t, func(m map[string]any) { sub(m, "participant")["role"] = "x" }), CheckSchema},
		{"unknown field shaped like a secret", mutated(t, func(m map[string]any) { m[testSecret] = testProof }), CheckSchema},
		{"missing title", mutated(t, func(m map[string]any) { delete(m, "title") }), CheckSchema},
		{"bad kind", mutated(t, func(m map[string]any) { sub(m, "participant")["kind"] = "robot" }), CheckSchema},
		{"bad date", mutated(t, func(m map[string]any) { m["deadline"] = "tomorrow" }), CheckSchema},
		{"bad email", mutated(t, func(m map[string]any) { m["inbox"] = "not an address" }), CheckSchema},
		{"bad digest", mutated(t, func(m map[string]any) { sub(m, "revision")["digest"] = "abc" }), CheckSchema},
		{"revision 0", mutated(t, func(m map[string]any) { sub(m, "revision")["number"] = 0 }), CheckSchema},
		{"method GET", mutated(t, func(m map[string]any) { sub(m, "agent_exchange")["method"] = "GET" }), CheckSchema},
		{"upper-case invitation id", mutated(t, func(m map[string]any) { m["agreement_id"] = strings.ToUpper(testAgreementID) }), CheckSchema},
		{"integer as float", bytes.Replace(validEnvelopeJSON(t), []byte(`"version": 1`), []byte(`"version": 1.0`), 1), CheckSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if bytes.Equal(tt.raw, validEnvelopeJSON(t)) {
				t.Fatal("test case did not change the valid envelope")
			}
			inv, err := ParseEnvelope(tt.raw, Policy{})
			if inv != nil {
				t.Fatalf("accepted: %v", inv)
			}
			var ce *CheckError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *CheckError", err)
			}
			if ce.Check != tt.check {
				t.Fatalf("check = %q (%v), want %q", ce.Check, err, tt.check)
			}
			assertNoLeak(t, err.Error())
			assertNoLeak(t, fmt.Sprintf("%+v %#v", err, err))
		})
	}
}

func TestInvitationRedaction(t *testing.T) {
	t.Parallel()
	inv, err := ParseEnvelope(validEnvelopeJSON(t), Policy{})
	if err != nil {
		t.Fatal(err)
	}
	var logBuf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logBuf, nil))
	logger.Info("got", "inv", inv, "env", inv.Envelope, "invv", *inv)
	js, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	envJS, err := json.Marshal(inv.Envelope)
	if err != nil {
		t.Fatal(err)
	}
	outputs := []string{
		fmt.Sprint(inv), fmt.Sprint(*inv), fmt.Sprintf("%+v", inv), fmt.Sprintf("%#v", inv), fmt.Sprintf("%#v", *inv),
		fmt.Sprintf("%v", inv.Envelope), fmt.Sprintf("%+v", inv.Envelope), fmt.Sprintf("%#v", inv.Envelope),
		fmt.Sprintf("%v", []*Invitation{inv}), logBuf.String(), string(js), string(envJS),
	}
	for _, s := range outputs {
		assertNoLeak(t, s)
	}
	if !strings.Contains(fmt.Sprint(inv), testInvitationID) || !strings.Contains(logBuf.String(), testInvitationID) {
		t.Error("redacted forms should still name the invitation")
	}
	// Redaction must not touch the values themselves.
	if inv.Secret != testSecret || inv.Envelope.AgentClaim.EmailProof != testProof {
		t.Error("redaction modified the invitation")
	}
}
