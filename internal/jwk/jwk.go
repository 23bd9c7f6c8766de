package jwk

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/consensus-md/consensus/internal/canon"
)

// The only key type and curve Consensus accepts.
const (
	KtyOKP   = "OKP"
	CrvEd    = "Ed25519"
	AlgEdDSA = "EdDSA" // the JOSE name of the algorithm, in a published JWK
	AlgEd    = "Ed25519"
)

// b64 is unpadded base64url that refuses non-canonical encodings (stray
// bits in the last character), so one key or signature has one spelling.
var b64 = base64.RawURLEncoding.Strict()

// ErrKey: a public key is not an OKP Ed25519 JWK of exactly kty, crv and x.
var ErrKey = errors.New("jwk: not an Ed25519 public key")

// Key is a participant's or the service's public key as an OKP JWK. Its
// JSON has exactly the members kty, crv and x, which is also its canonical
// form (the keys are already in RFC 8785 order).
type Key struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
}

// FromPublic returns the JWK of pub.
func FromPublic(pub ed25519.PublicKey) Key {
	return Key{Kty: KtyOKP, Crv: CrvEd, X: b64.EncodeToString(pub)}
}

// FromPrivate returns the JWK of priv's public half.
func FromPrivate(priv ed25519.PrivateKey) Key {
	return FromPublic(priv.Public().(ed25519.PublicKey))
}

// Parse reads a JWK that must have exactly the members kty "OKP", crv
// "Ed25519" and x (32 bytes, unpadded base64url): what a participant may
// bind at claim. Any other member, a duplicate, or another type is ErrKey
// (wrapped with the reason).
func Parse(raw []byte) (Key, error) {
	// Transform refuses duplicate members, which Unmarshal would resolve.
	if _, err := canon.Transform(raw); err != nil {
		return Key{}, fmt.Errorf("%w: not one JSON object", ErrKey)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return Key{}, fmt.Errorf("%w: not a JSON object", ErrKey)
	}
	for name := range m {
		if name != "kty" && name != "crv" && name != "x" {
			return Key{}, fmt.Errorf("%w: member %q is not allowed (only kty, crv and x)", ErrKey, name)
		}
	}
	var k Key
	for name, dst := range map[string]*string{"kty": &k.Kty, "crv": &k.Crv, "x": &k.X} {
		v, ok := m[name]
		if !ok || json.Unmarshal(v, dst) != nil {
			return Key{}, fmt.Errorf("%w: %s must be a string", ErrKey, name)
		}
	}
	if err := k.Check(); err != nil {
		return Key{}, err
	}
	return k, nil
}

// Check reports whether k is an OKP Ed25519 key whose x decodes to 32 bytes.
func (k Key) Check() error {
	if k.Kty != KtyOKP || k.Crv != CrvEd {
		return fmt.Errorf("%w: kty must be %q and crv %q", ErrKey, KtyOKP, CrvEd)
	}
	if _, err := k.Public(); err != nil {
		return err
	}
	return nil
}

// Public returns the raw public key. A non-canonical encoding or a point of
// small order is ErrKey.
func (k Key) Public() (ed25519.PublicKey, error) {
	b, err := b64.DecodeString(k.X)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: x must be %d bytes in unpadded base64url", ErrKey, ed25519.PublicKeySize)
	}
	if weakPublicKey(b) {
		return nil, fmt.Errorf("%w: x is a non-canonical encoding or a point of small order, which would accept forged signatures", ErrKey)
	}
	return ed25519.PublicKey(b), nil
}

// Thumbprint is the RFC 7638 thumbprint of k: unpadded base64url of the
// SHA-256 of {"crv":"Ed25519","kty":"OKP","x":"..."}. The service uses it
// as the kid of its keys, so anyone can recompute a kid from the key.
func (k Key) Thumbprint() string {
	// The members are fixed ASCII and x is base64url: no escaping is needed.
	sum := sha256.Sum256([]byte(`{"crv":"` + k.Crv + `","kty":"` + k.Kty + `","x":"` + k.X + `"}`))
	return b64.EncodeToString(sum[:])
}
