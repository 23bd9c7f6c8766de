// Package secret issues and checks the bearer credentials of Consensus and
// seals queued mail. Credentials are random, carry a kind prefix so a leaked
// one is recognizable, and are stored only as SHA-256 hashes compared in
// constant time.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Credential kind prefixes.
const (
	PrefixInvite      = "csi_"
	PrefixSession     = "css_"
	PrefixParticipant = "csp_"
	PrefixOperator    = "cso_"
	PrefixKey         = "cok_"
)

// Random returns n random bytes encoded base64url without padding.
func Random(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("secret: crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// NewInviteSecret returns csi_ followed by 32 random bytes (43 characters).
func NewInviteSecret() string { return PrefixInvite + Random(32) }

// NewEmailProof returns 24 random bytes as 32 base64url characters.
func NewEmailProof() string { return Random(24) }

// NewSessionToken returns a css_ session token.
func NewSessionToken() string { return PrefixSession + Random(32) }

// NewOperatorToken returns a cso_ operator token.
func NewOperatorToken() string { return PrefixOperator + Random(32) }

// NewAPIKey returns a cok_ API key of the operator API.
func NewAPIKey() string { return PrefixKey + Random(32) }

// Hash is the stored form of a credential.
func Hash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// Equal compares two stored hashes in constant time.
func Equal(a, b []byte) bool {
	return len(a) == len(b) && subtle.ConstantTimeCompare(a, b) == 1
}

// NormalizeInviteSecret accepts an invitation secret with or without its
// csi_ prefix and returns the prefixed form that was hashed.
func NormalizeInviteSecret(s string) string {
	if strings.HasPrefix(s, PrefixInvite) {
		return s
	}
	return PrefixInvite + s
}

// Keys are the purpose-bound keys derived from CONSENSUS_TOKEN_KEY.
type Keys struct {
	participant []byte
	seal        cipher.AEAD
	replyTag    []byte
}

// DeriveKeys derives one key per purpose with HKDF-SHA256, so the token key
// never serves two purposes directly.
func DeriveKeys(master []byte) (*Keys, error) {
	if len(master) < 32 {
		return nil, errors.New("secret: token key shorter than 32 bytes")
	}
	pk, err := hkdf.Key(sha256.New, master, nil, "consensus participant token v1", 32)
	if err != nil {
		return nil, err
	}
	sk, err := hkdf.Key(sha256.New, master, nil, "consensus outbox seal v1", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(sk)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	rk, err := hkdf.Key(sha256.New, master, nil, "consensus reply tag v1", 32)
	if err != nil {
		return nil, err
	}
	return &Keys{participant: pk, seal: aead, replyTag: rk}, nil
}

// ParticipantToken derives the participant token from a binding digest: the
// same binding always yields the same token, so a claim can be replayed.
func (k *Keys) ParticipantToken(bindingDigest string) string {
	m := hmac.New(sha256.New, k.participant)
	m.Write([]byte(bindingDigest))
	return PrefixParticipant + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Seal encrypts plaintext with AES-GCM; aad binds it to its row (the outbox id).
func (k *Keys) Seal(plaintext, aad []byte) []byte {
	nonce := make([]byte, k.seal.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic("secret: crypto/rand failed: " + err.Error())
	}
	return k.seal.Seal(nonce, nonce, plaintext, aad)
}

// Open decrypts what Seal produced with the same aad.
func (k *Keys) Open(sealed, aad []byte) ([]byte, error) {
	n := k.seal.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("secret: sealed message too short")
	}
	out, err := k.seal.Open(nil, sealed[:n], sealed[n:], aad)
	if err != nil {
		return nil, fmt.Errorf("secret: open sealed message: %w", err)
	}
	return out, nil
}
