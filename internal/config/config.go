package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
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
	Env         string
	DatabaseURL string
	// DBTimeout bounds the database work of one request (connect, pool
	// acquire, each statement): past it the request answers 503
	// (CONSENSUS_DB_TIMEOUT, a Go duration; default 5s).
	DBTimeout    time.Duration
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
	// RoomCacheBytes bounds the room cache (CONSENSUS_ROOM_CACHE_MB).
	RoomCacheBytes int
	// OutboxPoll is how long an idle outbox worker waits before looking for
	// due mail again (CONSENSUS_OUTBOX_POLL, a Go duration; default 1s).
	OutboxPoll time.Duration
	// Server holds the listeners, TLS, proxies, timeouts and shutdown
	// (settings_server.go).
	Server
	// Reply holds deciding by replying to an invitation email
	// (settings_reply.go).
	Reply Reply
	// Log holds the transparency log (settings_log.go).
	Log Log
	// Version is the build's version, set by consensusd (not a setting).
	Version string
}

// Load reads the configuration through getenv (os.Getenv in production) and
// validates it. It returns the first error in the order of the settings
// table; every error names the setting and never echoes a secret.
func Load(getenv func(string) string) (*Config, error) {
	c, report := Inspect(getenv)
	if err := report.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// Lookup reads the one setting name through getenv, applying its default,
// its NAME_FILE variant and its required rule, without checking the others:
// `consensusd migrate` needs only DATABASE_URL. The error names the setting;
// an unknown name is an error too.
func Lookup(getenv func(string) string, name string) (string, error) {
	for _, s := range settings {
		if s.Name == name {
			v, _, err := s.read(getenv)
			return v, err
		}
	}
	return "", fmt.Errorf("%s: not a setting", name)
}

// Validate checks the settings of a Config built by hand (Load has already
// applied these checks): the database, listen address, public origin and
// mail URL.
func (c *Config) Validate() error {
	if c.DatabaseURL == "" {
		return errors.New("DATABASE_URL: required: a PostgreSQL 14+ connection URL")
	}
	if err := checkListen(c.Listen); err != nil {
		return err
	}
	if err := c.validateOrigin(); err != nil {
		return err
	}
	if err := checkMailURL(c.MailURL); err != nil {
		return err
	}
	return c.refuseLocalMail()
}

// refuseLocalMail refuses Maildir delivery outside local runs: mail filed
// into a directory on one replica's disk reaches nobody.
func (c *Config) refuseLocalMail() error {
	if c.Env != EnvLocal && strings.HasPrefix(c.MailURL, "maildir:") {
		return errors.New("CONSENSUS_MAIL_URL: maildir:// is for local runs (CONSENSUS_ENV=local); production delivers over smtp:// or smtps://")
	}
	return nil
}

func checkListen(v string) error {
	if _, _, err := net.SplitHostPort(v); err != nil {
		return fmt.Errorf("CONSENSUS_LISTEN: must be host:port, got %q", v)
	}
	return nil
}

func checkMailURL(v string) error {
	if v == "" {
		return errors.New("CONSENSUS_MAIL_URL: required: smtp://, smtps:// or maildir:///path")
	}
	if u, err := url.Parse(v); err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps" && u.Scheme != "maildir") {
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
	if net.ParseIP(u.Hostname()) != nil && c.Env != EnvLocal {
		return fmt.Errorf("CONSENSUS_PUBLIC_ORIGIN: %s", ipOriginProblem(c.PublicOrigin))
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

// LocalOrigin is a local run's default origin: localhost on the port of
// listen (8080 when listen names none), a host passkeys accept, where
// 127.0.0.1 would not be one.
func LocalOrigin(listen string) string {
	_, port, err := net.SplitHostPort(listen)
	if err != nil || port == "" || port == "0" {
		port = "8080"
	}
	return "http://localhost:" + port
}

// ipOriginProblem says why an origin whose host is an IP address cannot
// serve the console, and what to set instead.
func ipOriginProblem(origin string) string {
	u, _ := url.Parse(origin)
	fix := "a DNS name"
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsLoopback() {
		fix = u.Scheme + "://localhost"
		if u.Port() != "" {
			fix += ":" + u.Port()
		}
	}
	return fmt.Sprintf("the console's passkeys (WebAuthn) cannot work at %s: a passkey's relying party must be a domain name, not an IP address; set CONSENSUS_PUBLIC_ORIGIN=%s and open the console there", origin, fix)
}

// Warnings is what a local run accepts but should not: an origin whose
// host is an IP address (production refuses it). consensusd logs each at
// start and config check prints them, each naming the setting and the fix.
func (c *Config) Warnings() []string {
	u, err := url.Parse(c.PublicOrigin)
	if err != nil || net.ParseIP(u.Hostname()) == nil {
		return nil
	}
	return []string{"CONSENSUS_PUBLIC_ORIGIN: " + ipOriginProblem(c.PublicOrigin)}
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

// TokenKey reads CONSENSUS_TOKEN_KEY (or its _FILE) alone, decoded, for a
// command that seals mail without loading the whole configuration.
func TokenKey(getenv func(string) string) ([]byte, error) {
	v, err := Lookup(getenv, "CONSENSUS_TOKEN_KEY")
	if err != nil {
		return nil, err
	}
	return decodeKey(v)
}
