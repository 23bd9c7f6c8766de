package venue

import (
	"crypto/ed25519"
	"fmt"

	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/room"
)

// claimantKey is the key a claim binds: the JWK as sent, its public half
// and the proof, checked against the binding the claim ends with.
type claimantKey struct {
	jwk    jwk.Key
	public ed25519.PublicKey
	proof  string
}

// claimKey checks the optional publicKey and keyProof of a claim body: both
// or neither; the key an OKP Ed25519 JWK of exactly kty, crv and x (not a
// point of small order); the proof an Ed25519 signature in unpadded
// base64url. It returns nil for a claim without a key. Errors are
// *room.ValidationError naming the field.
func claimKey(in ClaimInput) (*claimantKey, error) {
	hasKey := len(in.PublicKey) > 0 && string(in.PublicKey) != "null"
	switch {
	case !hasKey && in.KeyProof == nil:
		return nil, nil
	case !hasKey:
		return nil, &room.ValidationError{Field: "publicKey", Reason: "is required with keyProof: the Ed25519 public key as a JWK {\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"...\"}"}
	}
	key, err := jwk.Parse(in.PublicKey)
	var public ed25519.PublicKey
	if err == nil {
		public, err = key.Public()
	}
	if err != nil {
		return nil, &room.ValidationError{Field: "publicKey", Reason: "must be an Ed25519 public key as a JWK of exactly kty \"OKP\", crv \"Ed25519\" and x (32 bytes, unpadded base64url): " + err.Error()}
	}
	if in.KeyProof == nil {
		return nil, &room.ValidationError{Field: "keyProof", Reason: "is required with publicKey: your Ed25519 signature over the canonical bytes of the participant-binding/v2 object"}
	}
	if _, err := jwk.DecodeSignature(*in.KeyProof); err != nil {
		return nil, &room.ValidationError{Field: "keyProof", Reason: "must be an Ed25519 signature: 64 bytes in unpadded base64url (86 characters)"}
	}
	return &claimantKey{jwk: key, public: public, proof: *in.KeyProof}, nil
}

// bindingFor is the binding a claim makes of b: b itself without a key
// (participant-binding/v1, unchanged), else its v2 form naming key.
func (v *Venue) bindingFor(b room.Binding, key *claimantKey) any {
	if key == nil {
		return b
	}
	return b.WithKey(fmt.Sprintf(room.BindingV2SchemaFmt, v.Origin), key.jwk)
}

// signs checks that the claim's proof signs canonical, the bytes of the
// binding the claim ends with: the fresh one, or on a replay the first.
// Without a key there is nothing to check.
func (key *claimantKey) signs(canonical []byte) error {
	if key == nil || jwk.Verify(key.public, canonical, key.proof) == nil {
		return nil
	}
	return &room.ValidationError{Field: "keyProof", Reason: "does not verify: sign the RFC 8785 canonical bytes of the participant-binding/v2 object (the v1 binding with version 2, assurance " +
		room.AssuranceKey + " and public_key) with the key's private half; the binding names this invitation, your normalized inbox and the revision current at your first claim (a replay signs the same bytes again)"}
}
