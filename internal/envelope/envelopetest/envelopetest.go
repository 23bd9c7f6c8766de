// Package envelopetest provides a valid invitation-email/v1 envelope with
// fixed sample values, ways to mutate it, and a check that output never
// quotes its credentials, for the tests of every package that reads
// envelopes (envelope, ingest, the client runtime). The fixture emails under
// internal/ingest/testdata/mail carry the same values.
package envelopetest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/envelope"
)

// Fixed sample values; the credentials are canonical base64url of 32 and 24
// bytes.
const (
	InvitationID  = "0b0e7c1e-3f0a-4c55-9a51-2f4f1c1d8e01"
	OtherID       = "1b0e7c1e-3f0a-4c55-9a51-2f4f1c1d8e02"
	AgreementID   = "6a1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d"
	ParticipantID = "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a"
	SecretBody    = "q7Zr1LwXo9nB2cV4mK8pT0sYhE6uJ3aF5dG1iQ9xR2w"
	Secret        = "csi_" + SecretBody
	Proof         = "Pz8_mN4qW7eR1tY5uI9oA3sD6fG0hJ2k"
	Digest        = "3f5a1c9e7b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d1f3a"
)

// Map returns a valid envelope for origin as a JSON object that a test can
// mutate before encoding. Its URLs are spelled out, not built with
// agentroute or the issuer's code: the published layout is what it pins.
func Map(origin string) map[string]any {
	return map[string]any{
		"schema":        origin + "/schemas/invitation-email/v1",
		"version":       1,
		"invitation_id": InvitationID,
		"agreement_id":  AgreementID,
		"participant":   map[string]any{"id": ParticipantID, "kind": "agent", "display_name": "Buyer agent"},
		"inbox":         "buyer@agentmail.to",
		"title":         "Ship v2 on Friday",
		"deadline":      "2026-12-31T00:00:00Z",
		"expires_at":    "2026-12-31T00:00:00Z",
		"revision":      map[string]any{"number": 1, "digest": Digest},
		"invite_uri":    origin + "/invite/" + InvitationID + "#secret=" + Secret,
		"agent_exchange": map[string]any{
			"method": "POST",
			"href":   origin + "/api/v1/agent/invitations/" + InvitationID + "/exchange",
		},
		"agent_claim": map[string]any{
			"method":      "POST",
			"href":        origin + "/api/v1/agent/invitations/" + InvitationID + "/claim",
			"email_proof": Proof,
		},
		"docs": origin + "/llms.txt",
	}
}

// JSON encodes v indented, as the issuer does.
func JSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Valid is the valid envelope on envelope.DefaultOrigin.
func Valid(t testing.TB) []byte { return JSON(t, Map(envelope.DefaultOrigin)) }

// Mutated is the valid envelope after f changed it.
func Mutated(t testing.TB, f func(m map[string]any)) []byte {
	m := Map(envelope.DefaultOrigin)
	f(m)
	return JSON(t, m)
}

// Sub returns the nested object m[key] of an envelope map.
func Sub(m map[string]any, key string) map[string]any { return m[key].(map[string]any) }

// Body places js between the marker lines of an email body, with text
// around it.
func Body(js string) string {
	return "Hello,\n\n" + envelope.BeginMarker + "\n" + js + "\n" + envelope.EndMarker + "\n\nBye\n"
}

// AssertNoLeak fails when s quotes either credential (or the secret's body).
func AssertNoLeak(t testing.TB, s string) {
	t.Helper()
	for _, c := range []string{Secret, SecretBody, Proof} {
		if strings.Contains(s, c) {
			t.Fatalf("string leaks a credential: %q", s)
		}
	}
}

// IsCheck reports whether err is (or wraps) a *envelope.CheckError for
// check.
func IsCheck(err error, check string) bool {
	var ce *envelope.CheckError
	return errors.As(err, &ce) && ce.Check == check
}
