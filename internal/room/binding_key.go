package room

import "github.com/consensus-md/consensus/internal/jwk"

// Binding constants of a keyed claim (participant-binding/v2).
const (
	AssuranceKey       = "recipient-email-proof-possession+key-possession"
	BindingV2SchemaFmt = "%s/schemas/participant-binding/v2"
)

// KeyedBinding is the participant-binding/v2 object: the v1 members (with
// version 2, the v2 schema and the assurance that names key possession)
// plus the participant's public key. The keyProof sent at claim is the
// participant's signature over its canonical bytes, so the key cannot be
// bound by anyone who lacks it.
type KeyedBinding struct {
	Binding
	PublicKey jwk.Key `json:"public_key"`
}

// WithKey returns the v2 binding of b with key, under schema.
func (b Binding) WithKey(schema string, key jwk.Key) KeyedBinding {
	b.Schema, b.Version, b.Assurance = schema, 2, AssuranceKey
	return KeyedBinding{Binding: b, PublicKey: key}
}
