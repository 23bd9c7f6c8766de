package room

import "github.com/consensus-md/consensus/internal/jwk"

// Binding constants of a keyed claim (participant-binding/v2, SPEC R-SIGN-BIND).
const (
	AssuranceKey       = "recipient-email-proof-possession+key-possession"
	BindingV2SchemaFmt = "%s/schemas/participant-binding/v2"
)

// KeyedBinding is the participant-binding/v2 object: the v1 fields, the
// participant's public key, and the assurance that names key possession.
// The keyProof sent at claim is the participant's signature over its
// canonical bytes, so the key cannot be bound by anyone who lacks it.
type KeyedBinding struct {
	Schema          string  `json:"schema"`
	Version         int     `json:"version"`
	AgreementID     string  `json:"agreement_id"`
	InvitationID    string  `json:"invitation_id"`
	ParticipantID   string  `json:"participant_id"`
	Inbox           string  `json:"inbox"`
	RuntimeEndpoint *string `json:"runtime_endpoint"`
	Assurance       string  `json:"assurance"`
	Revision        int     `json:"revision"`
	RevisionDigest  string  `json:"revision_digest"`
	PublicKey       jwk.Key `json:"public_key"`
}

// WithKey returns the v2 binding of b with key, schema on origin.
func (b Binding) WithKey(schema string, key jwk.Key) KeyedBinding {
	return KeyedBinding{
		Schema: schema, Version: 2, AgreementID: b.AgreementID, InvitationID: b.InvitationID,
		ParticipantID: b.ParticipantID, Inbox: b.Inbox, RuntimeEndpoint: b.RuntimeEndpoint, Assurance: AssuranceKey,
		Revision: b.Revision, RevisionDigest: b.RevisionDigest, PublicKey: key,
	}
}
