package ingest

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// IMAPConfig says how to reach the agent's mailbox.
type IMAPConfig struct {
	Addr     string // host[:port]; the port defaults to 993 with TLS, else 143
	Username string
	Password string
	Mailbox  string // default "INBOX"
	// TLS is implicit TLS (imaps); StartTLS upgrades a plain connection.
	// With neither, the connection is plaintext, allowed only to a loopback
	// host (a local test server).
	TLS       bool
	StartTLS  bool
	TLSConfig *tls.Config // nil: system roots, server name from Addr
	// PollInterval is how often the mailbox is searched when the server lacks
	// IDLE (default 30s). With IDLE it only bounds how long a missed
	// notification can delay a message (at least 5 minutes).
	PollInterval time.Duration
}

// String formats the configuration without the password.
func (c IMAPConfig) String() string {
	return fmt.Sprintf("{Addr:%s Username:%s Password:%s Mailbox:%s TLS:%t StartTLS:%t PollInterval:%s}",
		c.Addr, c.Username, "[REDACTED]", c.Mailbox, c.TLS, c.StartTLS, c.PollInterval)
}

// GoString formats the configuration for %#v without the password.
func (c IMAPConfig) GoString() string { return "ingest.IMAPConfig" + c.String() }

// LogValue logs the configuration without the password.
func (c IMAPConfig) LogValue() slog.Value {
	return slog.GroupValue(slog.String("addr", c.Addr), slog.String("username", c.Username),
		slog.String("mailbox", c.Mailbox), slog.Bool("tls", c.TLS), slog.Bool("starttls", c.StartTLS))
}

// ParseIMAPURL reads imaps://user[:password]@host[:port]/MAILBOX (implicit
// TLS), imap://… (STARTTLS) or imap+plain://… (no TLS; loopback hosts only).
// A password is better passed separately (set Password afterwards): URLs end
// up in process listings and logs.
func ParseIMAPURL(raw string) (IMAPConfig, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return IMAPConfig{}, errors.New("ingest: imap url does not parse")
	}
	var cfg IMAPConfig
	switch u.Scheme {
	case "imaps":
		cfg.TLS = true
	case "imap":
		cfg.StartTLS = true
	case "imap+plain":
	default:
		return IMAPConfig{}, errors.New("ingest: imap url scheme must be imaps, imap or imap+plain")
	}
	if u.User != nil {
		cfg.Username = u.User.Username()
		cfg.Password, _ = u.User.Password()
	}
	cfg.Addr = u.Host
	cfg.Mailbox = strings.TrimPrefix(u.Path, "/")
	return cfg.withDefaults()
}

// withDefaults fills defaults and validates.
func (c IMAPConfig) withDefaults() (IMAPConfig, error) {
	if c.TLS && c.StartTLS {
		return c, errors.New("ingest: imap: TLS and StartTLS are exclusive")
	}
	if c.Addr == "" {
		return c, errors.New("ingest: imap: Addr is required")
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		host, port = strings.Trim(c.Addr, "[]"), "143"
		if c.TLS {
			port = "993"
		}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" {
		return c, errors.New("ingest: imap: Addr must be host[:port]")
	}
	c.Addr = net.JoinHostPort(host, port)
	if !c.TLS && !c.StartTLS && !isLoopbackHost(host) {
		return c, errors.New("ingest: imap: plaintext LOGIN is allowed only to a loopback host; set TLS or StartTLS")
	}
	if c.Username == "" {
		return c, errors.New("ingest: imap: Username is required")
	}
	if c.Mailbox == "" {
		c.Mailbox = "INBOX"
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 30 * time.Second
	}
	return c, nil
}

// isLoopbackHost reports whether host (a name or a literal IP, without
// brackets or port) stays on this machine, where a plaintext IMAP LOGIN
// cannot be overheard.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
