// Package config reads the service's settings from the environment and
// checks them, naming the offending setting in every error.
package config

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Environments.
const (
	EnvProduction = "production"
	EnvLocal      = "local"
)

// Config is every setting of consensusd.
type Config struct {
	// Env is production (default) or local. Local runs may use an http://
	// loopback origin; production refuses anything but https.
	Env          string
	DatabaseURL  string
	Listen       string
	PublicOrigin string
	// OperatorTokenHash is the SHA-256 of the operator token; the token itself is not kept.
	OperatorTokenHash [32]byte
	// TokenKey is the server secret that derives participant tokens and seals queued mail.
	TokenKey     []byte
	MailURL      string
	MailFrom     string
	SMTPPassword string
	// RateLimit is exchange and claim requests a minute per client address and route; 0 disables.
	RateLimit int
	// OutboxPoll is how long an idle outbox worker waits before looking for
	// due mail again (CONSENSUS_OUTBOX_POLL, a Go duration; default 1s).
	OutboxPoll time.Duration
	Version    string
}

// Load reads the configuration through getenv (os.Getenv in production) and
// validates it. Errors name the setting and never echo a secret.
func Load(getenv func(string) string) (*Config, error) {
	c := &Config{
		Env:          strings.TrimSpace(getenv("CONSENSUS_ENV")),
		DatabaseURL:  strings.TrimSpace(getenv("DATABASE_URL")),
		Listen:       strings.TrimSpace(getenv("CONSENSUS_LISTEN")),
		PublicOrigin: strings.TrimRight(strings.TrimSpace(getenv("CONSENSUS_PUBLIC_ORIGIN")), "/"),
		MailURL:      strings.TrimSpace(getenv("CONSENSUS_MAIL_URL")),
		MailFrom:     strings.TrimSpace(getenv("CONSENSUS_MAIL_FROM")),
		RateLimit:    120,
		OutboxPoll:   time.Second,
	}
	if c.Env == "" {
		c.Env = EnvProduction
	}
	if c.Env != EnvProduction && c.Env != EnvLocal {
		return nil, fmt.Errorf("CONSENSUS_ENV: must be %q or %q, got %q", EnvProduction, EnvLocal, c.Env)
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:8080"
	}
	if c.PublicOrigin == "" && c.Env == EnvLocal {
		c.PublicOrigin = "http://127.0.0.1:8080"
	}
	if c.MailFrom == "" {
		c.MailFrom = "Consensus <consensus@localhost>"
	}
	if v := strings.TrimSpace(getenv("CONSENSUS_RATE_LIMIT")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("CONSENSUS_RATE_LIMIT: must be a whole number of requests a minute (0 turns the limit off), got %q", v)
		}
		c.RateLimit = n
	}
	if v := strings.TrimSpace(getenv("CONSENSUS_OUTBOX_POLL")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Millisecond || d > time.Hour {
			return nil, fmt.Errorf("CONSENSUS_OUTBOX_POLL: must be a duration between 1ms and 1h such as 500ms or 2s, got %q", v)
		}
		c.OutboxPoll = d
	}
	op, err := Secret(getenv, "CONSENSUS_OPERATOR_TOKEN")
	if err != nil {
		return nil, err
	}
	if op == "" {
		return nil, errors.New("CONSENSUS_OPERATOR_TOKEN: required (or CONSENSUS_OPERATOR_TOKEN_FILE): the bearer token of the operator API")
	}
	if len(op) < 24 {
		return nil, errors.New("CONSENSUS_OPERATOR_TOKEN: must be at least 24 characters")
	}
	c.OperatorTokenHash = sha256.Sum256([]byte(op))
	key, err := Secret(getenv, "CONSENSUS_TOKEN_KEY")
	if err != nil {
		return nil, err
	}
	if c.TokenKey, err = decodeKey(key); err != nil {
		return nil, err
	}
	if c.SMTPPassword, err = Secret(getenv, "CONSENSUS_SMTP_PASSWORD"); err != nil {
		return nil, err
	}
	return c, c.Validate()
}

// Validate checks settings that do not depend on how they were read.
func (c *Config) Validate() error {
	if c.DatabaseURL == "" {
		return errors.New("DATABASE_URL: required: a PostgreSQL 14+ connection URL")
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("CONSENSUS_LISTEN: must be host:port, got %q", c.Listen)
	}
	if err := c.validateOrigin(); err != nil {
		return err
	}
	if c.MailURL == "" {
		return errors.New("CONSENSUS_MAIL_URL: required: smtp://, smtps:// or maildir:///path")
	}
	if u, err := url.Parse(c.MailURL); err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps" && u.Scheme != "maildir") {
		return errors.New("CONSENSUS_MAIL_URL: must start with smtp://, smtps:// or maildir:///")
	}
	return nil
}

func (c *Config) validateOrigin() error {
	if c.PublicOrigin == "" {
		return errors.New("CONSENSUS_PUBLIC_ORIGIN: required outside local runs: the https:// origin agents reach, such as https://consensus.md")
	}
	u, err := url.Parse(c.PublicOrigin)
	if err != nil || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("CONSENSUS_PUBLIC_ORIGIN: must be a bare origin such as https://consensus.md, got %q", c.PublicOrigin)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if c.Env == EnvLocal && isLoopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("CONSENSUS_PUBLIC_ORIGIN: production requires https://, got %q (http:// is accepted only with CONSENSUS_ENV=local on a loopback host)", c.PublicOrigin)
	default:
		return fmt.Errorf("CONSENSUS_PUBLIC_ORIGIN: must use https://, got %q", c.PublicOrigin)
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Secret reads the setting NAME, or the file named by NAME_FILE (trimmed);
// both set is an error naming the setting. An unset setting is "".
func Secret(getenv func(string) string, name string) (string, error) {
	v, file := getenv(name), strings.TrimSpace(getenv(name+"_FILE"))
	if v != "" && file != "" {
		return "", fmt.Errorf("%s: set either %s or %s_FILE, not both", name, name, name)
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s_FILE: %w", name, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return strings.TrimSpace(v), nil
}

func decodeKey(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("CONSENSUS_TOKEN_KEY: required (or CONSENSUS_TOKEN_KEY_FILE): at least 32 random bytes, hex or base64 encoded; keep it stable, tokens and queued mail depend on it")
	}
	for _, dec := range []func(string) ([]byte, error){
		hex.DecodeString, base64.StdEncoding.DecodeString, base64.RawStdEncoding.DecodeString,
		base64.URLEncoding.DecodeString, base64.RawURLEncoding.DecodeString,
	} {
		if b, err := dec(s); err == nil {
			if len(b) < 32 {
				return nil, fmt.Errorf("CONSENSUS_TOKEN_KEY: must decode to at least 32 bytes, got %d", len(b))
			}
			return b, nil
		}
	}
	return nil, errors.New("CONSENSUS_TOKEN_KEY: must be hex or base64")
}
