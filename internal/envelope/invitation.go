package envelope

import (
	"encoding/json"
	"fmt"
	"log/slog"
)

// Invitation is what an agent needs once every check passed. Secret (the
// invite fragment value, including any csi_ prefix) and EmailProof are private
// bearer credentials: String, GoString, LogValue and MarshalJSON redact them.
type Invitation struct {
	Envelope       Envelope
	InvitationID   string
	AgreementID    string
	Origin         string // the pinned origin the URLs were checked against
	ExchangeURL    string
	ClaimURL       string
	Secret         string
	EmailProof     string
	RevisionDigest string
	RevisionNumber int
	ParticipantID  string
	Inbox          string
}

// invitationFields is Invitation without methods, so formatting it cannot
// recurse.
type invitationFields Invitation

func (inv Invitation) redactedCopy() invitationFields {
	inv.Envelope = inv.Envelope.redactedCopy()
	if inv.Secret != "" {
		inv.Secret = redacted
	}
	if inv.EmailProof != "" {
		inv.EmailProof = redacted
	}
	return invitationFields(inv)
}

// String formats the invitation with its credentials redacted.
func (inv Invitation) String() string { return fmt.Sprintf("%+v", inv.redactedCopy()) }

// GoString formats the invitation for %#v with its credentials redacted.
func (inv Invitation) GoString() string { return "envelope.Invitation" + inv.String() }

// LogValue logs the invitation's identifiers only.
func (inv Invitation) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("invitation_id", inv.InvitationID),
		slog.String("agreement_id", inv.AgreementID),
		slog.String("participant_id", inv.ParticipantID),
		slog.String("inbox", inv.Inbox),
		slog.String("origin", inv.Origin),
		slog.Int("revision", inv.RevisionNumber),
	)
}

// MarshalJSON encodes the invitation with the secret and proof redacted.
func (inv Invitation) MarshalJSON() ([]byte, error) {
	return json.Marshal(inv.redactedCopy())
}
