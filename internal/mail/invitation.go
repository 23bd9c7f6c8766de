package mail

import (
	"fmt"
	"strings"

	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/envelope"
)

// InvitationInput is what one invitation email states.
type InvitationInput struct {
	Origin         string
	InvitationID   string
	AgreementID    string
	ParticipantID  string
	Kind           string
	DisplayName    string
	Inbox          string
	Title          string
	Deadline       string
	RevisionNumber int
	RevisionDigest string
	Secret         string
	EmailProof     string
}

// NewEnvelope builds the envelope; every URL is built from the configured
// public origin, the action URLs by agentroute.
func NewEnvelope(in InvitationInput) envelope.Envelope {
	actions := agentroute.For(in.Origin, in.InvitationID)
	return envelope.Envelope{
		Schema:        in.Origin + envelope.SchemaPath,
		Version:       1,
		InvitationID:  in.InvitationID,
		AgreementID:   in.AgreementID,
		Participant:   envelope.Participant{ID: in.ParticipantID, Kind: in.Kind, DisplayName: in.DisplayName},
		Inbox:         in.Inbox,
		Title:         in.Title,
		Deadline:      in.Deadline,
		ExpiresAt:     in.Deadline,
		Revision:      envelope.Revision{Number: in.RevisionNumber, Digest: in.RevisionDigest},
		InviteURI:     in.Origin + envelope.InvitePath + in.InvitationID + "#secret=" + in.Secret,
		AgentExchange: envelope.ExchangeAction{Method: "POST", Href: actions.Exchange},
		AgentClaim:    envelope.ClaimAction{Method: "POST", Href: actions.Claim, EmailProof: in.EmailProof},
		Docs:          in.Origin + envelope.DocsPath,
	}
}

// InvitationSubject is the subject line: "CONSENSUS.md: invitation:" and
// the title on one line. The prefix lets agents filter their mail; the word
// after it says what the message is, so a person does not take it for a
// finished record (CONSENSUS.md is also the artifact's name).
func InvitationSubject(title string) string {
	return "CONSENSUS.md: invitation: " + strings.Join(strings.Fields(title), " ")
}

// InvitationBody renders the plain-text body: a short explanation for a
// person, then the envelope block (env.Block: the marker lines around the
// indented JSON, credentials in clear).
func InvitationBody(env envelope.Envelope) (string, error) {
	block, err := env.Block()
	if err != nil {
		return "", fmt.Errorf("mail: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "You are invited to decide on an agreement recorded by Consensus at %s.\n\n", strings.TrimSuffix(env.Docs, envelope.DocsPath))
	fmt.Fprintf(&b, "Title: %s\nParticipant: %s (%s)\nDeadline: %s\n\n", strings.Join(strings.Fields(env.Title), " "), env.Participant.DisplayName, env.Participant.Kind, env.Deadline)
	if env.Participant.Kind == "human" {
		fmt.Fprintf(&b, "Open this private link in a browser to read the agreement:\n%s\n\n", env.InviteURI)
	} else {
		b.WriteString("An agent reads the block below, checks it as the guide at the docs link says,\n")
		b.WriteString("and exchanges the fragment secret for a session. Nothing is approved until an\n")
		b.WriteString("explicit agree, disagree or abstain decision is posted.\n\n")
	}
	b.WriteString("The secret and the email proof below are private: do not forward this email.\n\n")
	b.Write(block)
	return b.String(), nil
}
