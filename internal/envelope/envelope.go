package envelope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
)

// The paths, on the issuing origin, of the other URLs an envelope states.
// The agent action URLs follow internal/agentroute.
const (
	// SchemaPath is the path of the envelope's JSON Schema.
	SchemaPath = "/schemas/invitation-email/v1"
	// InvitePath starts invite_uri; the invitation id and the
	// #secret=<secret> fragment follow.
	InvitePath = "/invite/"
	// DocsPath is the agent guide index the docs field points to.
	DocsPath = "/llms.txt"
)

const redacted = "[REDACTED]"

// Envelope mirrors the invitation-email/v1 JSON object. InviteURI and
// AgentClaim.EmailProof hold private credentials, so String, GoString,
// LogValue and MarshalJSON all redact them; WireJSON and Block write them in
// clear for the email itself. Deadline and ExpiresAt are RFC 3339 instants,
// kept as the issuer wrote them.
type Envelope struct {
	Schema        string         `json:"schema"`
	Version       int            `json:"version"`
	InvitationID  string         `json:"invitation_id"`
	AgreementID   string         `json:"agreement_id"`
	Participant   Participant    `json:"participant"`
	Inbox         string         `json:"inbox"`
	Title         string         `json:"title"`
	Deadline      string         `json:"deadline"`
	ExpiresAt     string         `json:"expires_at"`
	Revision      Revision       `json:"revision"`
	InviteURI     string         `json:"invite_uri"`
	AgentExchange ExchangeAction `json:"agent_exchange"`
	AgentClaim    ClaimAction    `json:"agent_claim"`
	Docs          string         `json:"docs"`
	// DecisionRule states the revision's decision rule in words for the
	// email's text ("2 of the 3 required participants must agree"); it is
	// not part of the block.
	DecisionRule string `json:"-"`
}

// Participant is the invited slot.
type Participant struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	DisplayName string `json:"display_name"`
}

// Revision names the locked agreement revision the invitation is for.
type Revision struct {
	Number int    `json:"number"`
	Digest string `json:"digest"`
}

// ExchangeAction is the endpoint that trades the fragment secret for a session.
type ExchangeAction struct {
	Method string `json:"method"`
	Href   string `json:"href"`
}

// ClaimAction is the endpoint that binds the slot, with the email-only proof.
type ClaimAction struct {
	Method     string `json:"method"`
	Href       string `json:"href"`
	EmailProof string `json:"email_proof"`
}

// redactedCopy returns e with the fragment secret and the proof replaced.
func (e Envelope) redactedCopy() Envelope {
	if i := strings.IndexByte(e.InviteURI, '#'); i >= 0 {
		e.InviteURI = e.InviteURI[:i] + "#" + redacted
	}
	if e.AgentClaim.EmailProof != "" {
		e.AgentClaim.EmailProof = redacted
	}
	return e
}

// envelopeFields is Envelope without methods, so formatting or encoding it
// cannot recurse into the redacting methods.
type envelopeFields Envelope

// String formats the envelope with its credentials redacted.
func (e Envelope) String() string { return fmt.Sprintf("%+v", envelopeFields(e.redactedCopy())) }

// GoString formats the envelope for %#v with its credentials redacted.
func (e Envelope) GoString() string {
	return fmt.Sprintf("envelope.Envelope%+v", envelopeFields(e.redactedCopy()))
}

// LogValue logs the envelope's identifiers only.
func (e Envelope) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("invitation_id", e.InvitationID),
		slog.String("agreement_id", e.AgreementID),
		slog.String("participant_id", e.Participant.ID),
		slog.String("inbox", e.Inbox),
		slog.Int("revision", e.Revision.Number),
	)
}

// MarshalJSON encodes the envelope with the secret and proof redacted, so an
// envelope written to a log or a state file never carries them. The email
// uses WireJSON.
func (e Envelope) MarshalJSON() ([]byte, error) {
	return json.Marshal(envelopeFields(e.redactedCopy()))
}

// WireJSON encodes the envelope as the issuer writes it into the email:
// indented so no line grows long, HTML characters unescaped, a final newline,
// and the credentials in clear. It is the only encoding that reveals them;
// never log its output.
func (e Envelope) WireJSON() ([]byte, error) {
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(envelopeFields(e)); err != nil {
		return nil, fmt.Errorf("envelope: encode: %w", err)
	}
	return js.Bytes(), nil
}
