package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

// Transport delivers one composed message. Implementations are safe for
// concurrent use.
type Transport interface {
	// Send composes m and delivers it. It returns a *PermanentError when
	// retrying cannot help and any other error when a retry may succeed.
	Send(ctx context.Context, m *Message) (Receipt, error)
	// Close releases what the transport holds; Send must not be called after.
	Close() error
}

// Receipt is what the remote end said on success, e.g.
// "250 2.0.0 Ok: queued as X" or "maildir: new/<name>".
type Receipt struct{ Reply string }

// PermanentError marks a failure that retrying cannot fix (SMTP 5xx, invalid
// address, ...). Reply holds the server's reply when there was one.
type PermanentError struct {
	Reply string
	Err   error
}

// Error describes the failure: the reply first, then the cause unless the
// cause already says the reply (an SMTP error carries the server's words).
func (e *PermanentError) Error() string {
	switch {
	case e.Err != nil && e.Reply != "" && !strings.Contains(e.Err.Error(), e.Reply):
		return e.Reply + ": " + e.Err.Error()
	case e.Err != nil:
		return e.Err.Error()
	case e.Reply != "":
		return "mail: permanent failure: " + e.Reply
	default:
		return "mail: permanent failure"
	}
}

// Unwrap returns the underlying error.
func (e *PermanentError) Unwrap() error { return e.Err }

// IsPermanent reports whether err (or an error it wraps) is a
// *PermanentError. Every other error is temporary: retry with backoff.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// Options carries the transport settings that do not belong in the URL.
type Options struct {
	// Password overrides the password of an smtp(s) URL; the caller reads it
	// from CONSENSUS_SMTP_PASSWORD or CONSENSUS_SMTP_PASSWORD_FILE.
	Password string
	// TLSConfig, when set, is used for STARTTLS and implicit TLS (tests use it
	// to trust a self-signed certificate). ServerName defaults to the URL host.
	TLSConfig *tls.Config
	// HeloName is the name sent in EHLO; "localhost" when empty.
	HeloName string
	// DialTimeout bounds connecting to the SMTP server; 30s when zero.
	DialTimeout time.Duration
}

// Default SMTP ports: submission with STARTTLS and submission over TLS.
const (
	defaultSMTPPort  = "587"
	defaultSMTPSPort = "465"
)

// Open parses a CONSENSUS_MAIL_URL and returns its transport:
//
//	maildir:///abs/path                  Maildir; creates cur/, new/, tmp/ (0700) if missing
//	smtp://[user[:pass]@]host[:port]     SMTP submission, port 587, STARTTLS required
//	                                     unless host is localhost or a loopback IP
//	smtps://[user[:pass]@]host[:port]    implicit TLS, port 465
//
// opts.Password, when set, replaces the password in the URL. Errors start
// with "mail url:" and name the problem; they never contain the password.
func Open(rawURL string, opts Options) (Transport, error) {
	t, err := open(rawURL, opts)
	if err != nil {
		return nil, redactError(err, rawURL, opts.Password)
	}
	return t, nil
}

func open(rawURL string, opts Options) (Transport, error) {
	if strings.TrimSpace(rawURL) == "" {
		return nil, errors.New("mail url: empty (want maildir:///path, smtp://host or smtps://host)")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, parseError(err)
	}
	if u.Fragment != "" || u.RawFragment != "" {
		return nil, errors.New("mail url: fragment not allowed")
	}
	if u.RawQuery != "" || u.ForceQuery {
		return nil, errors.New("mail url: query parameters not supported")
	}
	switch strings.ToLower(u.Scheme) {
	case "maildir":
		return openMaildirURL(u)
	case "smtp":
		return openSMTPURL(u, opts, false)
	case "smtps":
		return openSMTPURL(u, opts, true)
	case "":
		return nil, errors.New("mail url: missing scheme (want maildir, smtp or smtps)")
	default:
		return nil, fmt.Errorf("mail url: unsupported scheme %q (want maildir, smtp or smtps)", u.Scheme)
	}
}

func openMaildirURL(u *url.URL) (Transport, error) {
	if u.Opaque != "" {
		return nil, fmt.Errorf("mail url: maildir path must be absolute, as in maildir:///var/mail/consensus (got maildir:%s)", u.Opaque)
	}
	if u.User != nil {
		return nil, errors.New("mail url: maildir takes no user or password")
	}
	if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
		return nil, fmt.Errorf("mail url: maildir host must be empty, as in maildir:///path (got %q)", u.Host)
	}
	if u.Path == "" || !path.IsAbs(u.Path) {
		return nil, errors.New("mail url: maildir path missing, as in maildir:///var/mail/consensus")
	}
	return OpenMaildir(path.Clean(u.Path))
}

func openSMTPURL(u *url.URL, opts Options, implicitTLS bool) (Transport, error) {
	scheme := strings.ToLower(u.Scheme)
	if u.Opaque != "" {
		return nil, fmt.Errorf("mail url: %s URL needs a host, as in %s://mail.example.org", scheme, scheme)
	}
	host := u.Hostname()
	if host == "" {
		return nil, fmt.Errorf("mail url: %s URL needs a host, as in %s://mail.example.org", scheme, scheme)
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("mail url: %s URL takes no path (got %q)", scheme, u.Path)
	}
	port := u.Port()
	if port == "" {
		if strings.HasSuffix(u.Host, ":") {
			return nil, errors.New("mail url: empty port")
		}
		port = defaultSMTPPort
		if implicitTLS {
			port = defaultSMTPSPort
		}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, fmt.Errorf("mail url: invalid port %q", port)
	}

	var user, pass string
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
	}
	if opts.Password != "" {
		pass = opts.Password
	}
	switch {
	case user == "" && pass != "":
		return nil, errors.New("mail url: a password is set but the URL names no user")
	case user != "" && pass == "":
		return nil, fmt.Errorf("mail url: user %q has no password (put it in CONSENSUS_SMTP_PASSWORD or CONSENSUS_SMTP_PASSWORD_FILE)", user)
	}

	helo := opts.HeloName
	if helo == "" {
		helo = "localhost"
	}
	if strings.ContainsAny(helo, " \t\r\n") {
		return nil, fmt.Errorf("mail url: HELO name %q contains white space", helo)
	}
	dialTimeout := opts.DialTimeout
	if dialTimeout <= 0 {
		dialTimeout = 30 * time.Second
	}
	return &smtpTransport{
		host:        host,
		addr:        net.JoinHostPort(host, port),
		implicitTLS: implicitTLS,
		user:        user,
		password:    pass,
		tlsConfig:   opts.TLSConfig,
		helo:        helo,
		dialTimeout: dialTimeout,
	}, nil
}

// parseError explains a url.Parse failure without quoting the URL: a
// *url.Error repeats all of it, and a malformed authority such as
// "user:secret" (no "@") is reported as a bad port holding the password.
func parseError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "invalid port"):
		return errors.New("mail url: invalid port (want host:port with a number; percent-encode \":\" and \"@\" in a user or password)")
	case strings.Contains(msg, "invalid userinfo"):
		return errors.New("mail url: invalid character in user or password (percent-encode it)")
	case strings.Contains(msg, "missing protocol scheme"):
		return errors.New("mail url: missing scheme (want maildir, smtp or smtps)")
	case strings.Contains(msg, "invalid character") && strings.Contains(msg, "host name"):
		return errors.New("mail url: invalid character in host name")
	case strings.Contains(msg, "invalid URL escape"):
		return errors.New("mail url: invalid percent-encoding")
	default:
		return errors.New("mail url: cannot parse (check scheme, host and port)")
	}
}

// redactError replaces the password, in clear or percent-encoded, wherever
// it might appear in err's text. It is a safety net: the messages built
// above never include it.
func redactError(err error, rawURL, password string) error {
	secrets := []string{password}
	if u, perr := url.Parse(rawURL); perr == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		}
	} else if at := strings.LastIndex(rawURL, "@"); at >= 0 {
		// Unparsable URL: treat whatever follows "user:" before "@" as secret.
		if i := strings.Index(rawURL, "://"); i >= 0 && i+3 < at {
			if _, p, ok := strings.Cut(rawURL[i+3:at], ":"); ok {
				secrets = append(secrets, p)
			}
		}
	}
	msg := err.Error()
	changed := false
	for _, s := range secrets {
		if len(s) < 4 {
			// Too short to tell apart from ordinary words of the message,
			// which never contains it anyway.
			continue
		}
		for _, form := range []string{s, url.PathEscape(s), url.QueryEscape(s), url.UserPassword("", s).String()[1:]} {
			if form != "" && strings.Contains(msg, form) {
				msg = strings.ReplaceAll(msg, form, "xxxxx")
				changed = true
			}
		}
	}
	if !changed {
		return err
	}
	return errors.New(msg)
}
