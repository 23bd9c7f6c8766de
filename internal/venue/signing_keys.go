package venue

import (
	"context"
	"crypto/ed25519"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/store"
)

// signingKid is the RFC 7638 thumbprint of the service key, "" without one.
func (v *Venue) signingKid() string {
	if v.Signer == nil {
		return ""
	}
	return jwk.FromPrivate(v.Signer).Thumbprint()
}

// RegisterSigningKey records the public half of the service key, so that
// the JWKS publishes it from now on, on every replica, and keeps publishing
// it after the key is rotated out: records it signed stay verifiable. Call
// it before serving; without a key it does nothing.
func (v *Venue) RegisterSigningKey(ctx context.Context) error {
	if v.Signer == nil {
		return nil
	}
	pub := v.Signer.Public().(ed25519.PublicKey)
	return v.Store.SigningKeyRegister(ctx, store.SigningKey{Kid: v.signingKid(), PublicKey: pub, CreatedAt: canon.Now(v.now())})
}

// SigningKeys is the JWKS of /.well-known/consensus-keys: every service key
// that has run, oldest first, each under its thumbprint.
func (v *Venue) SigningKeys(ctx context.Context) (*jwk.Set, error) {
	keys, err := v.Store.SigningKeyList(ctx)
	if err != nil {
		return nil, err
	}
	set := &jwk.Set{Keys: make([]jwk.Published, 0, len(keys))}
	for _, k := range keys {
		set.Keys = append(set.Keys, jwk.Publish(ed25519.PublicKey(k.PublicKey)))
	}
	return set, nil
}
