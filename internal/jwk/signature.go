package jwk

import (
	"crypto/ed25519"
	"errors"
)

// ErrSignature: a signature is malformed or does not verify.
var ErrSignature = errors.New("jwk: the Ed25519 signature does not verify")

// Sign signs msg with priv and returns the signature as unpadded base64url,
// the form of a keyProof, a Consensus-Signature header and a record's
// signature value.
func Sign(priv ed25519.PrivateKey, msg []byte) string {
	return b64.EncodeToString(ed25519.Sign(priv, msg))
}

// DecodeSignature decodes an unpadded base64url Ed25519 signature (86
// characters, 64 bytes); anything else is ErrSignature.
func DecodeSignature(sig string) ([]byte, error) {
	b, err := b64.DecodeString(sig)
	if err != nil || len(b) != ed25519.SignatureSize {
		return nil, ErrSignature
	}
	return b, nil
}

// Verify checks sig (unpadded base64url) over msg with pub. A malformed or
// wrong signature is ErrSignature.
func Verify(pub ed25519.PublicKey, msg []byte, sig string) error {
	b, err := DecodeSignature(sig)
	if err != nil {
		return err
	}
	if len(pub) != ed25519.PublicKeySize || !ed25519.Verify(pub, msg, b) {
		return ErrSignature
	}
	return nil
}

// EncodeSignature writes raw signature bytes as unpadded base64url.
func EncodeSignature(sig []byte) string { return b64.EncodeToString(sig) }

// DecodeSeed decodes an unpadded base64url Ed25519 seed (the d of a private
// OKP JWK, 32 bytes).
func DecodeSeed(d string) ([]byte, error) {
	b, err := b64.DecodeString(d)
	if err != nil || len(b) != ed25519.SeedSize {
		return nil, errors.New("jwk: d must be a 32-byte seed in unpadded base64url")
	}
	return b, nil
}
