package config

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Setting is one row of the settings table: an environment variable of
// consensusd, how help and docs describe it, and how its value is checked
// and stored in Config.
type Setting struct {
	// Name is the environment variable.
	Name string
	// Default is used when the variable is unset or blank; "" means none.
	Default string
	// DefaultText, when set, is how help and docs state a default that
	// depends on another setting (parse applies it).
	DefaultText string
	// Required, when set, makes an unset variable an error; it says what
	// the value is ("NAME: required: <Required>").
	Required string
	// Secret settings may instead be read from the file that NAME_FILE
	// names, and config check never shows their value.
	Secret bool
	// Doc says what the setting does; Markdown, `code` in backquotes.
	Doc string

	// parse checks the trimmed value (Default applied; "" only when the
	// setting has neither a default nor Required) and stores it in c. It
	// may read settings of earlier rows from c.
	parse func(c *Config, v string) error
	// show renders the effective value of a non-secret setting for config
	// check, even when parse failed (so it must mask anything secret inside
	// the value); nil shows the value as read.
	show func(c *Config) string
}

// FileVariant is NAME_FILE for a secret setting and "" otherwise.
func (s Setting) FileVariant() string {
	if s.Secret {
		return s.Name + "_FILE"
	}
	return ""
}

// DefaultDoc is how help and docs state the default: DefaultText, the
// default, "required" or "none".
func (s Setting) DefaultDoc() string {
	switch {
	case s.DefaultText != "":
		return s.DefaultText
	case s.Default != "":
		return "`" + s.Default + "`"
	case s.Required != "":
		return "required"
	default:
		return "none"
	}
}

// settings is the one table: the core rows below, then those of the
// listeners, the proxies in front and shutdown (settings_server.go). Rows
// are read in this order, so a row may depend on an earlier one (the public
// origin on CONSENSUS_ENV).
var settings = append(append(append(coreSettings[:len(coreSettings):len(coreSettings)], serverSettings...), replySettings...), logSettings...)

var coreSettings = []Setting{
	{
		Name: "CONSENSUS_ENV", Default: EnvProduction,
		Doc: "`production` or `local`; only `local` accepts an `http://` loopback origin.",
		parse: func(c *Config, v string) error {
			if v != EnvProduction && v != EnvLocal {
				return fmt.Errorf("CONSENSUS_ENV: must be %q or %q, got %q", EnvProduction, EnvLocal, v)
			}
			c.Env = v
			return nil
		},
	},
	{
		Name: "DATABASE_URL", Secret: true, Required: "a PostgreSQL 14+ connection URL",
		Doc:   "PostgreSQL 14+ connection URL (`postgres://user@host/db` or key=value form). `pool_max_conns` sets the connections a replica keeps (default 16). The role must be bound by row-level security, which keeps workspaces apart: production refuses to start as a superuser or a role with `BYPASSRLS` (a local run warns).",
		parse: func(c *Config, v string) error { c.DatabaseURL = v; return nil },
	},
	{
		Name: "CONSENSUS_DB_TIMEOUT", Default: "5s",
		Doc: "The longest a request waits for PostgreSQL, from `100ms` to `1m`: it bounds connecting, waiting for a pooled connection and every statement (the server's `statement_timeout`). A database that is down, unreachable or slower answers `503 unavailable` with `Retry-After` within it, never a 401 or 404. Once a request has run out of this time, a probe (a new connection running `SELECT 1`, half a second at most) decides: a database that answers is only busy and nothing changes; one that does not is refused at once, every request answering 503 without waiting, until a probe every half second gets an answer.",
		parse: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 100*time.Millisecond || d > time.Minute {
				return fmt.Errorf("CONSENSUS_DB_TIMEOUT: must be a duration between 100ms and 1m such as 5s, got %q", v)
			}
			c.DBTimeout = d
			return nil
		},
	},
	{
		Name: "CONSENSUS_LISTEN", Default: "127.0.0.1:8080",
		Doc: "Address (`host:port`) the API listens on; port `0` picks a free one.",
		parse: func(c *Config, v string) error {
			c.Listen = v
			return checkListen(v)
		},
	},
	{
		Name: "CONSENSUS_PUBLIC_ORIGIN", DefaultText: "`http://localhost:8080` (the port of `CONSENSUS_LISTEN`) when `CONSENSUS_ENV=local`; required (https) otherwise",
		Doc: "The origin agents reach; every URL the service publishes is built from it, never from `Host`. The console's passkeys (WebAuthn) take its host as their relying party, which cannot be an IP address: production refuses one, a local run warns (use `localhost`).",
		parse: func(c *Config, v string) error {
			c.PublicOrigin = strings.TrimRight(v, "/")
			if c.PublicOrigin == "" && c.Env == EnvLocal {
				c.PublicOrigin = LocalOrigin(c.Listen)
			}
			return c.validateOrigin()
		},
		show: func(c *Config) string { return c.PublicOrigin },
	},
	{
		Name: "CONSENSUS_OPERATOR_TOKEN", Secret: true, Required: "the bearer token of the operator API",
		Doc: "Operator bearer token, at least 24 characters; kept only as its SHA-256.",
		parse: func(c *Config, v string) error {
			if len(v) < 24 {
				return errors.New("CONSENSUS_OPERATOR_TOKEN: must be at least 24 characters")
			}
			c.OperatorTokenHash = sha256.Sum256([]byte(v))
			return nil
		},
	},
	{
		Name: "CONSENSUS_TOKEN_KEY", Secret: true,
		Required: "at least 32 random bytes, hex or base64 encoded; keep it stable, tokens and queued mail depend on it",
		Doc:      "At least 32 random bytes, hex or base64: derives participant tokens and seals queued mail. Changing it invalidates every participant token and every unsent email.",
		parse: func(c *Config, v string) (err error) {
			c.TokenKey, err = decodeKey(v)
			return err
		},
	},
	{
		Name: "CONSENSUS_MAIL_URL", Required: "smtp://, smtps:// or maildir:///path",
		Doc: "Where invitation mail goes: `smtp://user@host:587` (STARTTLS required unless loopback), `smtps://user@host:465`, or with `CONSENSUS_ENV=local` only, `maildir:///path`.",
		parse: func(c *Config, v string) error {
			c.MailURL = v
			if err := checkMailURL(v); err != nil {
				return err
			}
			return c.refuseLocalMail()
		},
		show: func(c *Config) string {
			if u, err := url.Parse(c.MailURL); err == nil {
				return u.Redacted()
			}
			return "(unparsable)"
		},
	},
	{
		Name: "CONSENSUS_SMTP_PASSWORD", Secret: true,
		Doc:   "SMTP password, when the mail URL has none.",
		parse: func(c *Config, v string) error { c.SMTPPassword = v; return nil },
	},
	{
		Name: "CONSENSUS_MAIL_FROM", Default: "Consensus <consensus@localhost>",
		Doc:   "Sender of invitation emails; the home page names its address, so people can tell a genuine invitation.",
		parse: func(c *Config, v string) error { c.MailFrom = v; return nil },
	},
	{
		Name: "CONSENSUS_RATE_LIMIT", Default: "120",
		Doc: "Exchange and claim requests a minute per client address and route; `0` turns the limit off.",
		parse: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("CONSENSUS_RATE_LIMIT: must be a whole number of requests a minute (0 turns the limit off), got %q", v)
			}
			c.RateLimit = n
			return nil
		},
	},
	{
		Name: "CONSENSUS_ROOM_CACHE_MB", Default: "48",
		Doc: "Memory, in MiB, each replica's room cache may hold: the rooms read lately, each encoded once for all its readers, so a read costs the database only its credential check and the events the cache lacks. The cache fills only with rooms that are read. Raise it when `consensus_room_cache_evictions_total` grows as fast as `consensus_room_cache_reads_total{result=\"whole\"}`: the rooms being read do not fit. From `1` to `65536`.",
		parse: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 65536 {
				return fmt.Errorf("CONSENSUS_ROOM_CACHE_MB: must be a whole number of MiB from 1 to 65536, got %q", v)
			}
			c.RoomCacheBytes = n << 20
			return nil
		},
	},
	{
		Name: "CONSENSUS_OUTBOX_POLL", Default: "1s",
		Doc: "How long an idle outbox worker waits before looking for due mail again: a duration from `1ms` to `1h`.",
		parse: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < time.Millisecond || d > time.Hour {
				return fmt.Errorf("CONSENSUS_OUTBOX_POLL: must be a duration between 1ms and 1h such as 500ms or 2s, got %q", v)
			}
			c.OutboxPoll = d
			return nil
		},
	},
}

// Settings returns a copy of the settings table, in the order it is read.
func Settings() []Setting { return append([]Setting(nil), settings...) }

// Source says where a setting's effective value came from.
type Source string

// Sources of a value.
const (
	SourceEnv     Source = "environment"
	SourceFile    Source = "file"
	SourceDefault Source = "default"
	SourceUnset   Source = "unset"
)

// read returns the trimmed value with the default applied and where it came
// from; an unset required setting is an error naming it.
func (s Setting) read(getenv func(string) string) (string, Source, error) {
	var v string
	src := SourceEnv
	if s.Secret {
		var err error
		if v, err = Secret(getenv, s.Name); err != nil {
			return "", src, err
		}
		if strings.TrimSpace(getenv(s.Name+"_FILE")) != "" {
			src = SourceFile
		}
	} else {
		v = strings.TrimSpace(getenv(s.Name))
	}
	if v != "" {
		return v, src, nil
	}
	switch {
	case s.Default != "":
		return s.Default, SourceDefault, nil
	case s.Required != "" && s.Secret:
		return "", SourceUnset, fmt.Errorf("%s: required (or %s_FILE): %s", s.Name, s.Name, s.Required)
	case s.Required != "":
		return "", SourceUnset, fmt.Errorf("%s: required: %s", s.Name, s.Required)
	}
	return "", SourceUnset, nil
}

// Entry is one setting as config check shows it.
type Entry struct {
	Setting Setting
	// Value is the effective value; for a secret only whether it is set.
	Value string
	// Source is where the value came from; File names the file for SourceFile.
	Source Source
	File   string
	// Err is what is wrong with the setting, or nil.
	Err error
}

// Report is every setting in table order, as read by Inspect.
type Report []Entry

// Err is the first error of the report in table order, or nil.
func (r Report) Err() error {
	for _, e := range r {
		if e.Err != nil {
			return e.Err
		}
	}
	return nil
}

// Errs is every error of the report, in table order.
func (r Report) Errs() []error {
	var errs []error
	for _, e := range r {
		if e.Err != nil {
			errs = append(errs, e.Err)
		}
	}
	return errs
}

// Inspect reads every setting through getenv, goes on past errors, and
// reports each setting's effective value (secrets masked), its source and
// its error. The Config is complete only when the report has no error.
func Inspect(getenv func(string) string) (*Config, Report) {
	c := &Config{Env: EnvProduction}
	report := make(Report, 0, len(settings))
	for _, s := range settings {
		e := Entry{Setting: s}
		v, src, err := s.read(getenv)
		e.Source = src
		if src == SourceFile {
			e.File = strings.TrimSpace(getenv(s.Name + "_FILE"))
		}
		if err == nil && s.parse != nil && (v != "" || s.Required == "") {
			err = s.parse(c, v)
		}
		e.Err = err
		switch {
		case s.Secret && v != "":
			e.Value = "(set, hidden)"
		case s.Secret:
			e.Value = "(unset)"
		case s.show != nil:
			e.Value = s.show(c)
		default:
			e.Value = v
		}
		if !s.Secret && e.Source == SourceUnset && e.Value != "" && err == nil {
			e.Source = SourceDefault // a default that depends on an earlier row
		}
		if e.Value == "" {
			e.Value = "(unset)"
		}
		report = append(report, e)
	}
	return c, report
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
