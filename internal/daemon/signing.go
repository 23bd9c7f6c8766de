package daemon

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"log/slog"

	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/translog"
)

// signingKey is the service's record-signing key: CONSENSUS_SIGNING_KEY
// (production requires it). A local run without one (make run writes one
// under .data/) gets a key for this process only: its public half is
// registered in the database like any other, so what it signs stays
// verifiable after a restart.
func signingKey(cfg *config.Config, log *slog.Logger) ed25519.PrivateKey {
	if cfg.SigningKey != nil {
		return cfg.SigningKey
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic("daemon: no randomness for a signing key: " + err.Error())
	}
	log.Warn("no CONSENSUS_SIGNING_KEY: records are signed with a key made for this process (local runs only)",
		slog.String("kid", jwk.FromPrivate(priv).Thumbprint()))
	return priv
}

// logSigner is the transparency log's checkpoint signer: CONSENSUS_LOG_KEY,
// or a key derived from the signing key, under CONSENSUS_LOG_ORIGIN.
func logSigner(cfg *config.Config, signing ed25519.PrivateKey) (*translog.Signer, error) {
	key := cfg.Log.LogKeyFor(signing)
	if key == nil {
		return nil, nil
	}
	s, err := translog.NewSigner(cfg.Log.Origin, key)
	if err != nil {
		return nil, fmt.Errorf("CONSENSUS_LOG_ORIGIN: %w", err)
	}
	return s, nil
}
