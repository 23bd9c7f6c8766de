package config

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/consensus-md/consensus/internal/witness"
)

// Log holds the settings of the transparency log (SPEC §21).
type Log struct {
	// Key signs the log's checkpoints; nil until Resolve derives it from
	// the service's signing key when CONSENSUS_LOG_KEY is unset.
	Key ed25519.PrivateKey
	// Origin is the checkpoints' origin line and the log key's name.
	Origin string
	// Interval is the longest wait between two integrations.
	Interval time.Duration
	// Witnesses are asked to cosign every new checkpoint.
	Witnesses []witness.Witness
}

// LogKeyFor returns the log's key: CONSENSUS_LOG_KEY when set, else one
// derived from the signing key with HKDF-SHA256 (so one secret to keep,
// two keys that never sign each other's messages). Nil without either.
func (l Log) LogKeyFor(signing ed25519.PrivateKey) ed25519.PrivateKey {
	if l.Key != nil || signing == nil {
		return l.Key
	}
	seed, err := hkdf.Key(sha256.New, signing.Seed(), nil, "consensus transparency log key v1", ed25519.SeedSize)
	if err != nil {
		panic("config: hkdf: " + err.Error()) // only for lengths sha256 cannot give
	}
	return ed25519.NewKeyFromSeed(seed)
}

var logSettings = []Setting{
	{
		Name: "CONSENSUS_LOG_KEY", Secret: true, DefaultText: "derived from `CONSENSUS_SIGNING_KEY`",
		Doc: "The transparency log's Ed25519 key, which signs its checkpoints: a PKCS#8 PEM private key or a 32-byte seed, hex or base64. Unset: derived from the signing key (HKDF-SHA256), so the log key changes only when that key does. Witnesses are told this key's public half; changing it starts a new log for them.",
		parse: func(c *Config, v string) (err error) {
			if v == "" {
				return nil
			}
			c.Log.Key, err = decodeSigningKey(v)
			if err != nil {
				return fmt.Errorf("CONSENSUS_LOG_KEY: %s", strings.TrimPrefix(err.Error(), "CONSENSUS_SIGNING_KEY: "))
			}
			return nil
		},
	},
	{
		Name: "CONSENSUS_LOG_ORIGIN", DefaultText: "the host of `CONSENSUS_PUBLIC_ORIGIN` followed by `/log`",
		Doc: "The origin line of the log's checkpoints, which names this deployment's log to witnesses and monitors (C2SP tlog-checkpoint): a schema-less URL such as `consensus.example.com/log`. Never change it once witnesses know the log.",
		parse: func(c *Config, v string) error {
			if v == "" {
				u, err := url.Parse(c.PublicOrigin)
				if err != nil || u.Host == "" {
					return fmt.Errorf("CONSENSUS_LOG_ORIGIN: cannot be derived from CONSENSUS_PUBLIC_ORIGIN %q", c.PublicOrigin)
				}
				v = u.Host + "/log"
			}
			if strings.ContainsAny(v, "+ \t\n") || strings.Contains(v, "://") || strings.ToValidUTF8(v, "") != v {
				return fmt.Errorf("CONSENSUS_LOG_ORIGIN: must be a schema-less URL without spaces or +, such as consensus.example.com/log, got %q", v)
			}
			c.Log.Origin = v
			return nil
		},
	},
	{
		Name: "CONSENSUS_LOG_INTERVAL", Default: "1s",
		Doc: "The longest time between two integrations of the transparency log (a Go duration, 50ms to 1m): room milestones become leaves and a new checkpoint is signed and sent to the witnesses at most this long after they happen.",
		parse: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 50*time.Millisecond || d > time.Minute {
				return fmt.Errorf("CONSENSUS_LOG_INTERVAL: must be a Go duration from 50ms to 1m, got %q", v)
			}
			c.Log.Interval = d
			return nil
		},
	},
	{
		Name: "CONSENSUS_LOG_WITNESSES",
		Doc:  "The witnesses asked to cosign each checkpoint (C2SP tlog-witness), separated by commas or newlines: each is the witness's key, either a signed-note verifier key (`name+hash+base64`) or `NAME=base64` of its Ed25519 public key, then a space and its submission URL (`https://witness.example/w1`, to which `/add-checkpoint` is added). Unset: checkpoints are signed by the log only. A witness that refuses or is down never delays an append; it is reported in the log, the metrics and `/readyz`.",
		parse: func(c *Config, v string) (err error) {
			c.Log.Witnesses, err = witness.Parse(v)
			if err != nil {
				return fmt.Errorf("CONSENSUS_LOG_WITNESSES: %w", err)
			}
			return nil
		},
	},
}
