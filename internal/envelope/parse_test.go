package envelope_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/envelope/envelopetest"
)

func TestParseEnvelopeValid(t *testing.T) {
	t.Parallel()
	inv, err := envelope.Parse(envelopetest.Valid(t), envelope.Policy{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	checks := []struct{ name, got, want string }{
		{"InvitationID", inv.InvitationID, envelopetest.InvitationID},
		{"AgreementID", inv.AgreementID, envelopetest.AgreementID},
		{"Origin", inv.Origin, envelope.DefaultOrigin},
		{"ExchangeURL", inv.ExchangeURL, envelope.DefaultOrigin + "/api/v1/agent/invitations/" + envelopetest.InvitationID + "/exchange"},
		{"ClaimURL", inv.ClaimURL, envelope.DefaultOrigin + "/api/v1/agent/invitations/" + envelopetest.InvitationID + "/claim"},
		{"Secret", inv.Secret, envelopetest.Secret},
		{"EmailProof", inv.EmailProof, envelopetest.Proof},
		{"RevisionDigest", inv.RevisionDigest, envelopetest.Digest},
		{"ParticipantID", inv.ParticipantID, envelopetest.ParticipantID},
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
	if inv.Envelope.Deadline != "2026-12-31T00:00:00Z" || inv.Envelope.ExpiresAt != inv.Envelope.Deadline {
		t.Errorf("instants %q and %q not decoded as written", inv.Envelope.Deadline, inv.Envelope.ExpiresAt)
	}
}

func TestParseEnvelopeWithoutPrefix(t *testing.T) {
	t.Parallel()
	raw := envelopetest.Mutated(t, func(m map[string]any) {
		m["invite_uri"] = envelope.DefaultOrigin + "/invite/" + envelopetest.InvitationID + "#secret=" + envelopetest.SecretBody
	})
	inv, err := envelope.Parse(raw, envelope.Policy{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if inv.Secret != envelopetest.SecretBody {
		t.Fatalf("secret not the fragment value")
	}
}

func TestParseEnvelopeLoopbackHTTP(t *testing.T) {
	t.Parallel()
	const local = "http://127.0.0.1:8080"
	raw := envelopetest.JSON(t, envelopetest.Map(local))
	inv, err := envelope.Parse(raw, envelope.Policy{Origin: local, AllowHTTPLoopback: true})
	if err != nil {
		t.Fatalf("loopback http with AllowHTTPLoopback: %v", err)
	}
	if inv.Origin != local {
		t.Fatalf("origin = %q", inv.Origin)
	}
	// Without the flag the policy itself is refused: no email can pass.
	if _, err := envelope.Parse(raw, envelope.Policy{Origin: local}); err == nil {
		t.Fatal("http origin accepted without AllowHTTPLoopback")
	}
	// The flag is for loopback hosts only.
	if err := (envelope.Policy{Origin: "http://consensus.md", AllowHTTPLoopback: true}).Validate(); err == nil {
		t.Fatal("http on a public host accepted")
	}
	// An https envelope does not pass an http policy (exact origin).
	if _, err := envelope.Parse(envelopetest.JSON(t, envelopetest.Map("https://127.0.0.1:8080")), envelope.Policy{Origin: local, AllowHTTPLoopback: true}); !envelopetest.IsCheck(err, envelope.CheckOrigin) {
		t.Fatalf("scheme mismatch: err = %v, want origin", err)
	}
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
		{"invite_uri on another origin", envelopetest.Mutated(t, func(m map[string]any) {
			m["invite_uri"] = evil + "/invite/" + envelopetest.InvitationID + "#secret=" + envelopetest.Secret
		}), envelope.CheckOrigin},
		{"whole envelope on another origin", envelopetest.JSON(t, envelopetest.Map(evil)), envelope.CheckOrigin},
		{"invite_uri over http", envelopetest.JSON(t, envelopetest.Map("http://consensus.md")), envelope.CheckOrigin},
		{"look-alike host", envelopetest.Mutated(t, func(m map[string]any) {
			m["invite_uri"] = "https://consensus.md.evil.example/invite/" + envelopetest.InvitationID + "#secret=" + envelopetest.Secret
		}), envelope.CheckOrigin},
		{"explicit port", envelopetest.Mutated(t, func(m map[string]any) {
			m["invite_uri"] = "https://consensus.md:443/invite/" + envelopetest.InvitationID + "#secret=" + envelopetest.Secret
		}), envelope.CheckOrigin},
		{"exchange href on another origin", envelopetest.Mutated(t, func(m map[string]any) {
			envelopetest.Sub(m, "agent_exchange")["href"] = evil + "/api/v1/agent/invitations/" + envelopetest.InvitationID + "/exchange"
		}), envelope.CheckOrigin},
		{"exchange href over http", envelopetest.Mutated(t, func(m map[string]any) {
			envelopetest.Sub(m, "agent_exchange")["href"] = "http://consensus.md/api/v1/agent/invitations/" + envelopetest.InvitationID + "/exchange"
		}), envelope.CheckOrigin},
		{"claim href on another origin", envelopetest.Mutated(t, func(m map[string]any) {
			envelopetest.Sub(m, "agent_claim")["href"] = evil + "/api/v1/agent/invitations/" + envelopetest.InvitationID + "/claim"
		}), envelope.CheckOrigin},
		{"docs on another origin", envelopetest.Mutated(t, func(m map[string]any) { m["docs"] = evil + "/llms.txt" }), envelope.CheckOrigin},
		// Check 3: one UUID.
		{"envelope id differs from invite path", envelopetest.Mutated(t, func(m map[string]any) { m["invitation_id"] = envelopetest.OtherID }), envelope.CheckUUID},
		{"invite path differs", envelopetest.Mutated(t, func(m map[string]any) {
			m["invite_uri"] = envelope.DefaultOrigin + "/invite/" + envelopetest.OtherID + "#secret=" + envelopetest.Secret
		}), envelope.CheckUUID},
		{"exchange path differs", envelopetest.Mutated(t, func(m map[string]any) {
			envelopetest.Sub(m, "agent_exchange")["href"] = envelope.DefaultOrigin + "/api/v1/agent/invitations/" + envelopetest.OtherID + "/exchange"
		}), envelope.CheckUUID},
		{"claim path differs", envelopetest.Mutated(t, func(m map[string]any) {
			envelopetest.Sub(m, "agent_claim")["href"] = envelope.DefaultOrigin + "/api/v1/agent/invitations/" + envelopetest.OtherID + "/claim"
		}), envelope.CheckUUID},
		// Check 4: the fragment.
		{"fragment named token", envelopetest.Mutated(t, func(m map[string]any) {
			m["invite_uri"] = envelope.DefaultOrigin + "/invite/" + envelopetest.InvitationID + "#token=" + envelopetest.Secret
		}), envelope.CheckFragment},
		{"extra fragment parameter", envelopetest.Mutated(t, func(m map[string]any) {
			m["invite_uri"] = envelope.DefaultOrigin + "/invite/" + envelopetest.InvitationID + "#secret=" + envelopetest.Secret + "&next=x"
		}), envelope.CheckFragment},
		{"parameter before secret", envelopetest.Mutated(t, func(m map[string]any) {
			m["invite_uri"] = envelope.DefaultOrigin + "/invite/" + envelopetest.InvitationID + "#a=b&secret=" + envelopetest.Secret
		}), envelope.CheckFragment},
		{"no fragment", envelopetest.Mutated(t, func(m map[string]any) {
			m["invite_uri"] = envelope.DefaultOrigin + "/invite/" + envelopetest.InvitationID
		}), envelope.CheckFragment},
		{"secret not base64url", envelopetest.Mutated(t, func(m map[string]any) {
			m["invite_uri"] = envelope.DefaultOrigin + "/invite/" + envelopetest.InvitationID + "#secret=csi_" + strings.Repeat("+", 43)
		}), envelope.CheckFragment},
		{"secret padded", envelopetest.Mutated(t, func(m map[string]any) {
			m["invite_uri"] = envelope.DefaultOrigin + "/invite/" + envelopetest.InvitationID + "#secret=" + envelopetest.SecretBody + "="
		}), envelope.CheckFragment},
		{"secret too short", envelopetest.Mutated(t, func(m map[string]any) {
			m["invite_uri"] = envelope.DefaultOrigin + "/invite/" + envelopetest.InvitationID + "#secret=csi_abc"
		}), envelope.CheckFragment},
		{"secret non-canonical trailing bits", envelopetest.Mutated(t, func(m map[string]any) {
			m["invite_uri"] = envelope.DefaultOrigin + "/invite/" + envelopetest.InvitationID + "#secret=" + envelopetest.SecretBody[:42] + "x"
		}), envelope.CheckFragment},
		// Check 5: the proof.
		{"missing proof", envelopetest.Mutated(t, func(m map[string]any) { delete(envelopetest.Sub(m, "agent_claim"), "email_proof") }), envelope.CheckProof},
		{"empty proof", envelopetest.Mutated(t, func(m map[string]any) { envelopetest.Sub(m, "agent_claim")["email_proof"] = "" }), envelope.CheckProof},
		{"malformed proof", envelopetest.Mutated(t, func(m map[string]any) {
			envelopetest.Sub(m, "agent_claim")["email_proof"] = envelopetest.Proof[:31] + "!"
		}), envelope.CheckProof},
		{"short proof", envelopetest.Mutated(t, func(m map[string]any) { envelopetest.Sub(m, "agent_claim")["email_proof"] = envelopetest.Proof[:20] }), envelope.CheckProof},
		// JSON.
		{"invalid JSON", []byte(`{"schema": `), envelope.CheckJSON},
		{"not an object", []byte(`[1,2]`), envelope.CheckJSON},
		{"empty", []byte(``), envelope.CheckJSON},
		{"two objects", append(envelopetest.Valid(t), []byte(`{}`)...), envelope.CheckJSON},
		{"trailing garbage", append(envelopetest.Valid(t), []byte(` x`)...), envelope.CheckJSON},
		{"duplicate key", bytes.Replace(envelopetest.Valid(t), []byte(`"title": "Ship v2 on Friday",`),
			[]byte(`"title": "Ship v2 on Friday", "title": "Other",`), 1), envelope.CheckJSON},
		{"duplicate key escaped", bytes.Replace(envelopetest.Valid(t), []byte(`"title": "Ship v2 on Friday",`),
			[]byte(`"title": "Ship v2 on Friday", "\u0074itle": "Other",`), 1), envelope.CheckJSON},
		{"duplicate nested key", bytes.Replace(envelopetest.Valid(t), []byte(`"display_name": "Buyer agent",`),
			[]byte(`"display_name": "Buyer agent", "display_name": "Seller",`), 1), envelope.CheckJSON},
		{"invalid UTF-8", bytes.Replace(envelopetest.Valid(t), []byte("Friday"), []byte("Fri\xffday"), 1), envelope.CheckJSON},
		// Schema.
		{"version 2", envelopetest.Mutated(t, func(m map[string]any) { m["version"] = 2 }), envelope.CheckSchema},
		{"unknown field", envelopetest.Mutated(t, func(m map[string]any) { m["callback"] = "https://consensus.md/x" }), envelope.CheckSchema},
		{"unknown nested field", envelopetest.Mutated(t, func(m map[string]any) { envelopetest.Sub(m, "participant")["role"] = "x" }), envelope.CheckSchema},
		{"unknown field shaped like a secret", envelopetest.Mutated(t, func(m map[string]any) { m[envelopetest.Secret] = envelopetest.Proof }), envelope.CheckSchema},
		{"missing title", envelopetest.Mutated(t, func(m map[string]any) { delete(m, "title") }), envelope.CheckSchema},
		{"bad kind", envelopetest.Mutated(t, func(m map[string]any) { envelopetest.Sub(m, "participant")["kind"] = "robot" }), envelope.CheckSchema},
		{"bad date", envelopetest.Mutated(t, func(m map[string]any) { m["deadline"] = "tomorrow" }), envelope.CheckSchema},
		// Instants Go's RFC 3339 parser refuses stay refused, though the
		// envelope keeps them as text.
		{"lower-case t and z", envelopetest.Mutated(t, func(m map[string]any) { m["expires_at"] = "2026-12-31t00:00:00z" }), envelope.CheckSchema},
		{"leap second", envelopetest.Mutated(t, func(m map[string]any) { m["deadline"] = "2026-12-31T23:59:60Z" }), envelope.CheckSchema},
		{"bad email", envelopetest.Mutated(t, func(m map[string]any) { m["inbox"] = "not an address" }), envelope.CheckSchema},
		{"bad digest", envelopetest.Mutated(t, func(m map[string]any) { envelopetest.Sub(m, "revision")["digest"] = "abc" }), envelope.CheckSchema},
		{"revision 0", envelopetest.Mutated(t, func(m map[string]any) { envelopetest.Sub(m, "revision")["number"] = 0 }), envelope.CheckSchema},
		{"method GET", envelopetest.Mutated(t, func(m map[string]any) { envelopetest.Sub(m, "agent_exchange")["method"] = "GET" }), envelope.CheckSchema},
		{"upper-case invitation id", envelopetest.Mutated(t, func(m map[string]any) { m["agreement_id"] = strings.ToUpper(envelopetest.AgreementID) }), envelope.CheckSchema},
		{"integer as float", bytes.Replace(envelopetest.Valid(t), []byte(`"version": 1`), []byte(`"version": 1.0`), 1), envelope.CheckSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if bytes.Equal(tt.raw, envelopetest.Valid(t)) {
				t.Fatal("test case did not change the valid envelope")
			}
			inv, err := envelope.Parse(tt.raw, envelope.Policy{})
			if inv != nil {
				t.Fatalf("accepted: %v", inv)
			}
			var ce *envelope.CheckError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *CheckError", err)
			}
			if ce.Check != tt.check {
				t.Fatalf("check = %q (%v), want %q", ce.Check, err, tt.check)
			}
			envelopetest.AssertNoLeak(t, err.Error())
			envelopetest.AssertNoLeak(t, fmt.Sprintf("%+v %#v", err, err))
		})
	}
}
