package venue

import (
	"fmt"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/room"
)

// claimKey checks the optional publicKey and keyProof of a claim body: both
// or neither; the key an OKP Ed25519 JWK of exactly kty, crv and x (not a
// point of small order); the proof an Ed25519 signature in unpadded
// base64url. It returns nil for a claim without a key. Errors are
// *room.ValidationError naming the field.
func claimKey(in ClaimInput) (*jwk.Key, error) {
	hasKey := len(in.PublicKey) > 0 && string(in.PublicKey) != "null"
	switch {
	case !hasKey && in.KeyProof == nil:
		return nil, nil
	case !hasKey:
		return nil, &room.ValidationError{Field: "publicKey", Reason: "is required with keyProof: the Ed25519 public key as a JWK {\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"...\"}"}
	}
	key, err := jwk.Parse(in.PublicKey)
	if err != nil {
		return nil, &room.ValidationError{Field: "publicKey", Reason: "must be an Ed25519 public key as a JWK of exactly kty \"OKP\", crv \"Ed25519\" and x (32 bytes, unpadded base64url): " + err.Error()}
	}
	if in.KeyProof == nil {
		return nil, &room.ValidationError{Field: "keyProof", Reason: "is required with publicKey: your Ed25519 signature over the canonical bytes of the participant-binding/v2 object"}
	}
	if _, err := jwk.DecodeSignature(*in.KeyProof); err != nil {
		return nil, &room.ValidationError{Field: "keyProof", Reason: "must be an Ed25519 signature: 64 bytes in unpadded base64url (86 characters)"}
	}
	return &key, nil
}

// bind returns the binding a claim fixes, its canonical bytes and digest:
// b itself without a key (participant-binding/v1, unchanged), else its v2
// form with key, whose canonical bytes proof must sign
// (*room.ValidationError on keyProof otherwise).
func (v *Venue) bind(b room.Binding, key *jwk.Key, proof *string) (any, []byte, string, error) {
	if key == nil {
		canonical, digest, err := canon.DigestOf(b)
		return b, canonical, digest, err
	}
	kb := b.WithKey(fmt.Sprintf(room.BindingV2SchemaFmt, v.Origin), *key)
	canonical, digest, err := canon.DigestOf(kb)
	if err != nil {
		return nil, nil, "", err
	}
	pub, err := key.Public()
	if err != nil {
		return nil, nil, "", &room.ValidationError{Field: "publicKey", Reason: err.Error()}
	}
	if jwk.Verify(pub, canonical, *proof) != nil {
		return nil, nil, "", &room.ValidationError{Field: "keyProof", Reason: "does not verify: sign the RFC 8785 canonical bytes of the participant-binding/v2 object (the v1 binding with version 2, assurance " +
			room.AssuranceKey + " and public_key) with the key's private half; the binding names this invitation, its current revision digest and your normalized inbox"}
	}
	return kb, canonical, digest, nil
}
