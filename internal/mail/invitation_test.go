package mail_test

import (
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/envelope/envelopetest"
	"github.com/consensus-md/consensus/internal/ingest"
	"github.com/consensus-md/consensus/internal/mail"
)

// TestInvitationEmailPassesTheAgentChecks composes an invitation email as the
// server does and reads it as an invited agent does: writer and reader share
// one envelope definition, and this proves they also agree on the bytes.
func TestInvitationEmailPassesTheAgentChecks(t *testing.T) {
	t.Parallel()
	const origin = "http://127.0.0.1:8080"
	for _, kind := range []string{"agent", "human"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			env := mail.NewEnvelope(mail.InvitationInput{
				Origin: origin, InvitationID: envelopetest.InvitationID, AgreementID: envelopetest.AgreementID,
				ParticipantID: envelopetest.ParticipantID, Kind: kind, DisplayName: "Zoë <agent>", Inbox: "zoe@agentmail.to",
				Title: "Réunion à Zürich & <co>", Deadline: "2026-12-31T00:00:00Z", RevisionNumber: 1,
				RevisionDigest: envelopetest.Digest, Secret: envelopetest.Secret, EmailProof: envelopetest.Proof,
			})
			body, err := mail.InvitationBody(env)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := mail.Compose(&mail.Message{
				MessageID: "3f1c9a.invite@127.0.0.1", From: "Consensus <noreply@consensus.md>", To: env.Inbox,
				Subject: mail.InvitationSubject(env.Title), Date: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), Body: body,
			})
			if err != nil {
				t.Fatal(err)
			}
			inv, err := ingest.ParseMessageBytes(raw, envelope.Policy{Origin: origin, AllowHTTPLoopback: true})
			if err != nil {
				t.Fatalf("the agent refuses the server's email: %v", err)
			}
			if inv.Envelope != env || inv.Secret != envelopetest.Secret || inv.EmailProof != envelopetest.Proof {
				t.Fatalf("the email did not carry the envelope intact: %v", inv)
			}
			if !strings.Contains(body, "\n"+envelope.BeginMarker+"\n{") || !strings.HasSuffix(body, "}\n"+envelope.EndMarker+"\n") {
				t.Fatalf("body does not end in the envelope block:\n%s", body)
			}
		})
	}
}

// TestInvitationSubject: the subject keeps the CONSENSUS.md: prefix, reads
// as an invitation and holds the title on one line.
func TestInvitationSubject(t *testing.T) {
	t.Parallel()
	if got := mail.InvitationSubject("Ship\n  v2  on Friday"); got != "CONSENSUS.md: invitation: Ship v2 on Friday" {
		t.Fatalf("subject %q", got)
	}
}
