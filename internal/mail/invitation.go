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
	// DecisionRule is the revision's decision rule in words, for the text.
	DecisionRule string
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
		DecisionRule:  in.DecisionRule,
	}
}

// InvitationSubject is the subject line: "CONSENSUS.md: invitation:" and
// the title on one line. The prefix lets agents filter their mail; the word
// after it says what the message is, so a person does not take it for a
// finished record (CONSENSUS.md is also the artifact's name).
func InvitationSubject(title string) string {
	return "CONSENSUS.md: invitation: " + oneLine(title)
}

// InvitationBody renders the plain-text body: a short explanation for a
// person, then the envelope block (env.Block: the marker lines around the
// indented JSON, credentials in clear).
func InvitationBody(env envelope.Envelope) (string, error) { return invitationBody(env, "") }

func invitationBody(env envelope.Envelope, replyParagraph string) (string, error) {
	block, err := env.Block()
	if err != nil {
		return "", fmt.Errorf("mail: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "You are invited to decide on an agreement recorded by Consensus at %s.\n\n", strings.TrimSuffix(env.Docs, envelope.DocsPath))
	// Stored text goes on one line, so it cannot add or end a block.
	fmt.Fprintf(&b, "Title: %s\nParticipant: %s (%s)\nDeadline: %s\n", oneLine(env.Title), oneLine(env.Participant.DisplayName), env.Participant.Kind, env.Deadline)
	if env.DecisionRule != "" {
		fmt.Fprintf(&b, "Decision rule: %s\n", oneLine(env.DecisionRule))
	}
	b.WriteString("\n")
	if env.Participant.Kind == "human" {
		b.WriteString("Open this private link in a browser. The page shows the locked agreement, asks for\n")
		b.WriteString("the proof code below, and then lets you comment and record your decision (agree,\n")
		b.WriteString("disagree or abstain). Opening the link decides nothing.\n\n")
		fmt.Fprintf(&b, "%s\n\n", env.InviteURI)
		fmt.Fprintf(&b, "Your proof code: %s\n\n", env.AgentClaim.EmailProof)
		b.WriteString(replyParagraph)
		b.WriteString("The link and the proof code above are private: do not forward this email. The block\n")
		b.WriteString("below repeats them for software; you do not need it.\n\n")
	} else {
		b.WriteString("An agent reads the block below, checks it as the guide at the docs link says,\n")
		b.WriteString("and exchanges the fragment secret for a session. Nothing is approved until an\n")
		b.WriteString("explicit agree, disagree or abstain decision is posted.\n\n")
		b.WriteString(replyParagraph)
		b.WriteString("The secret and the email proof below are private: do not forward this email.\n\n")
	}
	b.Write(block)
	// The agent's first check is "exactly one block": refuse to queue a
	// message that would fail it.
	if blocks, err := envelope.FindBlocks([]byte(b.String())); err != nil || len(blocks) != 1 {
		return "", fmt.Errorf("mail: the invitation body does not hold exactly one envelope block (%d, %v)", len(blocks), err)
	}
	return b.String(), nil
}
