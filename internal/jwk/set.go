package jwk

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"

	"github.com/consensus-md/consensus/internal/canon"
)

// Use is the use member of every published key.
const Use = "sig"

// Published is one key of the service's JWKS: the public JWK with its kid
// (the RFC 7638 thumbprint), use "sig" and alg "EdDSA".
type Published struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// Publish returns pub as a JWKS entry whose kid is its thumbprint.
func Publish(pub ed25519.PublicKey) Published {
	k := FromPublic(pub)
	return Published{Kty: k.Kty, Crv: k.Crv, X: k.X, Kid: k.Thumbprint(), Use: Use, Alg: AlgEdDSA}
}

// Key returns the bare public JWK of p.
func (p Published) Key() Key { return Key{Kty: p.Kty, Crv: p.Crv, X: p.X} }

// Set is a JWKS: {"keys": [...]}.
type Set struct {
	Keys []Published `json:"keys"`
}

// ParseSet reads a JWKS. Keys that are not OKP Ed25519 are skipped (a JWKS
// may list other kinds); a usable key without a kid is an error, as is a
// set with no usable key.
func ParseSet(raw []byte) (Set, error) {
	var in struct {
		Keys []json.RawMessage `json:"keys"`
	}
	// A member given twice is refused (encoding/json would keep the last),
	// as the Node verifier refuses it: both must read the same keys.
	if _, err := canon.Transform(raw); err != nil {
		return Set{}, fmt.Errorf("jwk: not a JWKS: %w", err)
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return Set{}, fmt.Errorf("jwk: not a JWKS: %w", err)
	}
	var s Set
	for i, k := range in.Keys {
		var p Published
		if err := json.Unmarshal(k, &p); err != nil {
			return Set{}, fmt.Errorf("jwk: key %d: %w", i, err)
		}
		if p.Kty != KtyOKP || p.Crv != CrvEd {
			continue
		}
		if err := p.Key().Check(); err != nil {
			return Set{}, fmt.Errorf("jwk: key %d: %w", i, err)
		}
		if p.Kid == "" {
			return Set{}, fmt.Errorf("jwk: key %d has no kid", i)
		}
		s.Keys = append(s.Keys, p)
	}
	if len(s.Keys) == 0 {
		return Set{}, fmt.Errorf("jwk: the JWKS holds no Ed25519 key")
	}
	return s, nil
}

// Find returns the public key published under kid.
func (s Set) Find(kid string) (ed25519.PublicKey, bool) {
	for _, p := range s.Keys {
		if p.Kid == kid {
			pub, err := p.Key().Public()
			return pub, err == nil
		}
	}
	return nil, false
}

// PublicKeys is every usable Ed25519 key of the set, in order; a member
// that is not one is left out.
func (s Set) PublicKeys() []ed25519.PublicKey {
	var keys []ed25519.PublicKey
	for _, p := range s.Keys {
		if pub, err := p.Key().Public(); err == nil {
			keys = append(keys, pub)
		}
	}
	return keys
}
