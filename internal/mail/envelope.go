package mail

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Block markers: the envelope sits between these exact lines.
const (
	BeginMarker = "---BEGIN CONSENSUS INVITATION V1---"
	EndMarker   = "---END CONSENSUS INVITATION V1---"
)

// Envelope is the invitation-email/v1 object (schemas/invitation-email/v1.json).
type Envelope struct {
	Schema        string              `json:"schema"`
	Version       int                 `json:"version"`
	InvitationID  string              `json:"invitation_id"`
	AgreementID   string              `json:"agreement_id"`
	Participant   EnvelopeParticipant `json:"participant"`
	Inbox         string              `json:"inbox"`
	Title         string              `json:"title"`
	Deadline      string              `json:"deadline"`
	ExpiresAt     string              `json:"expires_at"`
	Revision      EnvelopeRevision    `json:"revision"`
	InviteURI     string              `json:"invite_uri"`
	AgentExchange EnvelopeAction      `json:"agent_exchange"`
	AgentClaim    EnvelopeClaim       `json:"agent_claim"`
	Docs          string              `json:"docs"`
}

// EnvelopeParticipant names the invited slot.
type EnvelopeParticipant struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	DisplayName string `json:"display_name"`
}

// EnvelopeRevision pins the locked revision.
type EnvelopeRevision struct {
	Number int    `json:"number"`
	Digest string `json:"digest"`
}

// EnvelopeAction is an absolute action URL with its method.
type EnvelopeAction struct {
	Method string `json:"method"`
	Href   string `json:"href"`
}

// EnvelopeClaim is the claim action with the email-only proof.
type EnvelopeClaim struct {
	Method     string `json:"method"`
	Href       string `json:"href"`
	EmailProof string `json:"email_proof"`
}

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
// public origin.
func NewEnvelope(in InvitationInput) Envelope {
	base := in.Origin + "/api/v1/agent/invitations/" + in.InvitationID
	return Envelope{
		Schema:        in.Origin + "/schemas/invitation-email/v1",
		Version:       1,
		InvitationID:  in.InvitationID,
		AgreementID:   in.AgreementID,
		Participant:   EnvelopeParticipant{ID: in.ParticipantID, Kind: in.Kind, DisplayName: in.DisplayName},
		Inbox:         in.Inbox,
		Title:         in.Title,
		Deadline:      in.Deadline,
		ExpiresAt:     in.Deadline,
		Revision:      EnvelopeRevision{Number: in.RevisionNumber, Digest: in.RevisionDigest},
		InviteURI:     in.Origin + "/invite/" + in.InvitationID + "#secret=" + in.Secret,
		AgentExchange: EnvelopeAction{Method: "POST", Href: base + "/exchange"},
		AgentClaim:    EnvelopeClaim{Method: "POST", Href: base + "/claim", EmailProof: in.EmailProof},
		Docs:          in.Origin + "/llms.txt",
	}
}

// InvitationSubject is the subject line: it starts with "CONSENSUS.md:".
func InvitationSubject(title string) string {
	return "CONSENSUS.md: " + strings.Join(strings.Fields(title), " ")
}

// InvitationBody renders the plain-text body: a short explanation for a
// person, then the envelope between the marker lines. The JSON is indented
// so no line grows long, and HTML characters are not escaped.
func InvitationBody(env Envelope) (string, error) {
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(env); err != nil {
		return "", fmt.Errorf("mail: encode envelope: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "You are invited to decide on an agreement recorded by Consensus at %s.\n\n", strings.TrimSuffix(env.Docs, "/llms.txt"))
	fmt.Fprintf(&b, "Title: %s\nParticipant: %s (%s)\nDeadline: %s\n\n", strings.Join(strings.Fields(env.Title), " "), env.Participant.DisplayName, env.Participant.Kind, env.Deadline)
	if env.Participant.Kind == "human" {
		fmt.Fprintf(&b, "Open this private link in a browser to read the agreement:\n%s\n\n", env.InviteURI)
	} else {
		b.WriteString("An agent reads the block below, checks it as the guide at the docs link says,\n")
		b.WriteString("and exchanges the fragment secret for a session. Nothing is approved until an\n")
		b.WriteString("explicit agree, disagree or abstain decision is posted.\n\n")
	}
	b.WriteString("The secret and the email proof below are private: do not forward this email.\n\n")
	b.WriteString(BeginMarker + "\n")
	b.Write(js.Bytes())
	b.WriteString(EndMarker + "\n")
	return b.String(), nil
}
