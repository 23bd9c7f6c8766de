package mail

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// smtpTransport submits each message over its own SMTP connection.
type smtpTransport struct {
	host        string // for the TLS server name and the plaintext policy
	addr        string // host:port to dial
	implicitTLS bool   // smtps: TLS from the first byte
	user        string // empty: no AUTH
	password    string
	tlsConfig   *tls.Config
	helo        string
	dialTimeout time.Duration
}

// isLoopbackHost reports whether host names this machine: "localhost" or a
// loopback IP. Only such hosts may be spoken to without TLS, because the
// traffic never leaves the machine.
func isLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// plaintextPolicy decides what to do when a server does not offer STARTTLS
// on an smtp:// connection: continue without TLS only for a loopback host.
func plaintextPolicy(host string, startTLSOffered bool) error {
	if startTLSOffered || isLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("smtp: %s does not offer STARTTLS; refusing to send in clear text to a non-loopback host (use smtps:// or enable STARTTLS)", host)
}

// Send composes m and submits it: EHLO, STARTTLS (or implicit TLS), AUTH
// PLAIN when a user is configured, MAIL, RCPT, DATA, QUIT. An invalid
// message and a 5xx reply to MAIL, RCPT or DATA give a *PermanentError; a
// 4xx reply, a network failure, a TLS problem, or a failure before the
// transaction (greeting, EHLO, AUTH: server or configuration trouble that
// affects every message) give a temporary error.
func (t *smtpTransport) Send(ctx context.Context, m *Message) (Receipt, error) {
	raw, err := Compose(m)
	if err != nil {
		return Receipt{}, &PermanentError{Err: err}
	}
	from, _ := parseAddress(m.From) // Compose has validated both
	to, _ := parseAddress(m.To)

	c, conn, err := t.connect(ctx)
	if err != nil {
		return Receipt{}, t.ctxError(ctx, err)
	}
	defer c.Close()
	// go-smtp sets and clears its own deadlines around every command, so a
	// deadline set on conn would be lost: close the connection instead when
	// ctx ends, and cap go-smtp's timeouts by the time left.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if d, ok := ctx.Deadline(); ok {
		left := max(time.Until(d), time.Millisecond)
		c.CommandTimeout = min(c.CommandTimeout, left)
		c.SubmissionTimeout = min(c.SubmissionTimeout, left)
	}

	reply, err := t.submit(c, from.Address, to.Address, raw)
	if err != nil {
		return Receipt{}, t.ctxError(ctx, err)
	}
	// The message is accepted; a failed QUIT changes nothing.
	_ = c.Quit()
	return Receipt{Reply: reply}, nil
}

// Close does nothing: every Send uses its own connection.
func (t *smtpTransport) Close() error { return nil }

// connect dials the server and sets up TLS as the URL demands. It returns
// the client and the underlying TCP connection. Closing that connection
// when ctx ends is what bounds the greeting, EHLO and STARTTLS exchanges.
func (t *smtpTransport) connect(ctx context.Context) (*smtp.Client, net.Conn, error) {
	dialer := &net.Dialer{Timeout: t.dialTimeout}
	dial := func() (net.Conn, func() bool, error) {
		conn, err := dialer.DialContext(ctx, "tcp", t.addr)
		if err != nil {
			return nil, nil, fmt.Errorf("smtp: dial %s: %w", t.addr, err)
		}
		return conn, context.AfterFunc(ctx, func() { conn.Close() }), nil
	}
	hello := func(c *smtp.Client) error {
		if err := c.Hello(t.helo); err != nil {
			c.Close()
			return stageError("EHLO", err)
		}
		return nil
	}

	raw, stop, err := dial()
	if err != nil {
		return nil, nil, err
	}
	defer func() { stop() }()

	if t.implicitTLS {
		tc := tls.Client(raw, t.tlsConfigFor())
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, nil, fmt.Errorf("smtp: TLS handshake with %s: %w", t.addr, err)
		}
		c := smtp.NewClient(tc)
		if err := hello(c); err != nil {
			return nil, nil, err
		}
		return c, raw, nil
	}

	if isLoopbackHost(t.host) {
		// STARTTLS is optional here, but go-smtp can only upgrade a
		// connection it opened with STARTTLS in mind: ask first, and open a
		// second connection when the server offers it.
		c := smtp.NewClient(raw)
		if err := hello(c); err != nil {
			return nil, nil, err
		}
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return c, raw, nil
		}
		_ = c.Quit()
		c.Close()
		stop()
		if raw, stop, err = dial(); err != nil {
			return nil, nil, err
		}
	}

	c, err := smtp.NewClientStartTLS(raw, t.tlsConfigFor())
	if err != nil {
		raw.Close()
		// go-smtp reports a missing STARTTLS capability only as text; if
		// that text ever changes, the failure stays temporary and readable.
		if strings.Contains(err.Error(), "support STARTTLS") {
			if perr := plaintextPolicy(t.host, false); perr != nil {
				return nil, nil, perr
			}
		}
		return nil, nil, stageError("STARTTLS", err)
	}
	// The first EHLO went out as "localhost" (go-smtp sends it before we can
	// choose); this one, after TLS, carries the configured name.
	if err := hello(c); err != nil {
		return nil, nil, err
	}
	return c, raw, nil
}

// tlsConfigFor returns the configured TLS settings with the server name set
// to the URL host, at least TLS 1.2.
func (t *smtpTransport) tlsConfigFor() *tls.Config {
	cfg := &tls.Config{}
	if t.tlsConfig != nil {
		cfg = t.tlsConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = t.host
	}
	if cfg.MinVersion == 0 {
		cfg.MinVersion = tls.VersionTLS12
	}
	return cfg
}

// submit runs AUTH and the mail transaction and returns the final reply.
func (t *smtpTransport) submit(c *smtp.Client, from, to string, raw []byte) (string, error) {
	if t.user != "" {
		if _, isTLS := c.TLSConnectionState(); !isTLS && !isLoopbackHost(t.host) {
			return "", fmt.Errorf("smtp: refusing AUTH over a connection without TLS to %s", t.host)
		}
		if !c.SupportsAuth(sasl.Plain) {
			return "", fmt.Errorf("smtp: %s does not offer AUTH PLAIN", t.host)
		}
		if err := c.Auth(sasl.NewPlainClient("", t.user, t.password)); err != nil {
			return "", stageError("AUTH", err)
		}
	}
	if err := c.Mail(from, nil); err != nil {
		return "", transactionError("MAIL FROM", err)
	}
	if err := c.Rcpt(to, nil); err != nil {
		return "", transactionError("RCPT TO", err)
	}
	w, err := c.Data()
	if err != nil {
		return "", transactionError("DATA", err)
	}
	if _, err := w.Write(raw); err != nil {
		_ = w.Close()
		return "", transactionError("DATA", err)
	}
	resp, err := w.CloseWithResponse()
	if err != nil {
		return "", transactionError("DATA", err)
	}
	return "250 " + resp.StatusText, nil
}

// ctxError prefers the context's verdict when ctx ended during the attempt:
// the connection was closed because of it.
func (t *smtpTransport) ctxError(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !IsPermanent(err) {
		return fmt.Errorf("smtp: %s: %w (%v)", t.addr, cerr, err)
	}
	return err
}

// replyError is a temporary failure carrying the server's reply.
type replyError struct {
	stage string
	reply string
	err   *smtp.SMTPError
}

func (e *replyError) Error() string { return "smtp: " + e.stage + ": " + e.reply }
func (e *replyError) Unwrap() error { return e.err }

// stageError wraps a failure outside the mail transaction: always temporary,
// since it says something about the server or our settings, not about this
// message.
func stageError(stage string, err error) error {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		return &replyError{stage: stage, reply: formatReply(se), err: se}
	}
	return fmt.Errorf("smtp: %s: %w", stage, err)
}

// transactionError wraps a failure of MAIL, RCPT or DATA: a 5xx reply is
// permanent, anything else temporary.
func transactionError(stage string, err error) error {
	var se *smtp.SMTPError
	if !errors.As(err, &se) {
		return fmt.Errorf("smtp: %s: %w", stage, err)
	}
	re := &replyError{stage: stage, reply: formatReply(se), err: se}
	if se.Code >= 500 && se.Code <= 599 {
		return &PermanentError{Reply: re.reply, Err: re}
	}
	return re
}

// formatReply rebuilds the reply line, e.g. "550 5.1.1 No such user".
func formatReply(se *smtp.SMTPError) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%03d", se.Code)
	if ec := se.EnhancedCode; ec != smtp.EnhancedCodeNotSet && ec != smtp.NoEnhancedCode {
		fmt.Fprintf(&b, " %d.%d.%d", ec[0], ec[1], ec[2])
	}
	if msg := strings.Join(strings.Fields(se.Message), " "); msg != "" {
		b.WriteString(" " + msg)
	}
	return b.String()
}
