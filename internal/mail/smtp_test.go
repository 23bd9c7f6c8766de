package mail

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/testcert"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// clientTLS trusts the test certificate.
func clientTLS() *tls.Config {
	_, pool := testcert.Pair()
	return &tls.Config{RootCAs: pool}
}

// received is one message as the sink saw it.
type received struct {
	from, to   string
	data       []byte
	tls        bool
	user, pass string
}

// sink is a real in-process SMTP server that records what it accepts and
// fails on demand.
type sink struct {
	mu       sync.Mutex
	msgs     []received
	rcptErrs []error // returned once each by the next RCPT commands
	dataErrs []error // returned once each by the next DATA commands
	dropData bool    // close the connection in the middle of DATA
	wantUser string  // AUTH PLAIN accepts only this user and wantPass
	wantPass string
}

func (s *sink) messages() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.msgs...)
}

func (s *sink) next(l *[]error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(*l) == 0 {
		return nil
	}
	err := (*l)[0]
	*l = (*l)[1:]
	return err
}

func (s *sink) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &sinkSession{sink: s, conn: c}, nil
}

type sinkSession struct {
	sink       *sink
	conn       *smtp.Conn
	from, to   string
	user, pass string
}

func (ss *sinkSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (ss *sinkSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, user, pass string) error {
		if user != ss.sink.wantUser || pass != ss.sink.wantPass {
			return smtp.ErrAuthFailed
		}
		ss.user, ss.pass = user, pass
		return nil
	}), nil
}

func (ss *sinkSession) Mail(from string, _ *smtp.MailOptions) error {
	if ss.sink.wantUser != "" && ss.user == "" {
		return smtp.ErrAuthRequired
	}
	ss.from = from
	return nil
}

func (ss *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if err := ss.sink.next(&ss.sink.rcptErrs); err != nil {
		return err
	}
	ss.to = to
	return nil
}

func (ss *sinkSession) Data(r io.Reader) error {
	if ss.sink.dropData {
		_, _ = io.CopyN(io.Discard, r, 100)
		ss.conn.Conn().Close()
		return errors.New("dropped")
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if err := ss.sink.next(&ss.sink.dataErrs); err != nil {
		return err
	}
	_, isTLS := ss.conn.TLSConnectionState()
	ss.sink.mu.Lock()
	ss.sink.msgs = append(ss.sink.msgs, received{ss.from, ss.to, data, isTLS, ss.user, ss.pass})
	ss.sink.mu.Unlock()
	return nil
}

func (ss *sinkSession) Reset()        { ss.from, ss.to = "", "" }
func (ss *sinkSession) Logout() error { return nil }

type serverMode int

const (
	plainServer    serverMode = iota // no TLS at all
	startTLSServer                   // offers STARTTLS
	implicitServer                   // TLS from the first byte (smtps)
)

// startSink serves s on 127.0.0.1:0 and returns the listening port.
func startSink(t *testing.T, s *sink, mode serverMode) string {
	t.Helper()
	srv := smtp.NewServer(s)
	srv.Domain = "sink.test"
	srv.AllowInsecureAuth = true // the loopback plaintext case may AUTH
	srv.ErrorLog = log.New(io.Discard, "", 0)
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	cert, _ := testcert.Pair()
	var l net.Listener
	var err error
	switch mode {
	case plainServer:
		l, err = net.Listen("tcp", "127.0.0.1:0")
	case startTLSServer:
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		l, err = net.Listen("tcp", "127.0.0.1:0")
	case implicitServer:
		l, err = tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	}
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

func openSMTP(t *testing.T, url string, opts Options) *smtpTransport {
	t.Helper()
	tr, err := Open(url, opts)
	if err != nil {
		t.Fatalf("Open(%q): %v", url, err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr.(*smtpTransport)
}

func sendCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSMTPSendPlaintextLoopback(t *testing.T) {
	t.Parallel()
	s := &sink{}
	port := startSink(t, s, plainServer)
	tr := openSMTP(t, "smtp://127.0.0.1:"+port, Options{HeloName: "consensus.test"})

	m := testMessage()
	m.Body = "Line one\n.starts with a dot\n..two dots\n.\nGrüße\n"
	rc, err := tr.Send(sendCtx(t), m)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if rc.Reply != "250 2.0.0 OK: queued" { // go-smtp's reply to the final dot
		t.Errorf("Reply = %q, want the server's reply to DATA", rc.Reply)
	}
	msgs := s.messages()
	if len(msgs) != 1 {
		t.Fatalf("server received %d messages", len(msgs))
	}
	want, _ := Compose(m)
	if got := msgs[0]; got.from != "noreply@consensus.md" || got.to != "agent@example.org" || got.tls {
		t.Errorf("envelope = %+v", got)
	}
	if !bytes.Equal(msgs[0].data, want) {
		t.Errorf("data differs:\n got %q\nwant %q", msgs[0].data, want)
	}
}

func TestSMTPStartTLSWhenOfferedOnLoopback(t *testing.T) {
	t.Parallel()
	s := &sink{wantUser: "bob", wantPass: "correct horse"}
	port := startSink(t, s, startTLSServer)
	tr := openSMTP(t, "smtp://bob@localhost:"+port, Options{Password: "correct horse", TLSConfig: clientTLS()})
	if _, err := tr.Send(sendCtx(t), testMessage()); err != nil {
		t.Fatalf("Send: %v", err)
	}
	msgs := s.messages()
	if len(msgs) != 1 || !msgs[0].tls {
		t.Fatalf("want one message over TLS, got %+v", msgs)
	}
	if msgs[0].user != "bob" || msgs[0].pass != "correct horse" {
		t.Errorf("credentials received: %q / %q", msgs[0].user, msgs[0].pass)
	}
}

func TestSMTPStartTLSRequiredForRemoteHost(t *testing.T) {
	t.Parallel()
	// The transport believes it talks to mail.example.org; only the dial
	// address points at the local sink.
	tlsSink := &sink{wantUser: "bob", wantPass: "pw-remote"}
	tr := openSMTP(t, "smtp://bob@mail.example.org", Options{Password: "pw-remote", TLSConfig: clientTLS()})
	tr.addr = "127.0.0.1:" + startSink(t, tlsSink, startTLSServer)
	if _, err := tr.Send(sendCtx(t), testMessage()); err != nil {
		t.Fatalf("Send over STARTTLS: %v", err)
	}
	if msgs := tlsSink.messages(); len(msgs) != 1 || !msgs[0].tls || msgs[0].user != "bob" {
		t.Fatalf("received %+v", msgs)
	}

	plain := &sink{}
	tr2 := openSMTP(t, "smtp://bob@mail.example.org", Options{Password: "pw-remote"})
	tr2.addr = "127.0.0.1:" + startSink(t, plain, plainServer)
	_, err := tr2.Send(sendCtx(t), testMessage())
	if err == nil || !strings.Contains(err.Error(), "does not offer STARTTLS") {
		t.Fatalf("Send without STARTTLS = %v, want a refusal", err)
	}
	if IsPermanent(err) {
		t.Errorf("refusal is permanent; a server setting can fix it: %v", err)
	}
	if strings.Contains(err.Error(), "pw-remote") {
		t.Errorf("error reveals the password: %v", err)
	}
	if n := len(plain.messages()); n != 0 {
		t.Errorf("plaintext server received %d messages", n)
	}
}

func TestPlaintextPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host    string
		offered bool
		allowed bool
	}{
		{"127.0.0.1", false, true},
		{"127.8.9.10", false, true},
		{"::1", false, true},
		{"localhost", false, true},
		{"LOCALHOST.", false, true},
		{"mail.localhost", false, true},
		{"mail.example.org", false, false},
		{"10.0.0.1", false, false},
		{"::ffff:8.8.8.8", false, false},
		{"localhost.example.org", false, false},
		{"mail.example.org", true, true},
	}
	for _, tt := range tests {
		err := plaintextPolicy(tt.host, tt.offered)
		if (err == nil) != tt.allowed {
			t.Errorf("plaintextPolicy(%q, %v) = %v, want allowed=%v", tt.host, tt.offered, err, tt.allowed)
		}
	}
}

func TestSMTPSImplicitTLS(t *testing.T) {
	t.Parallel()
	s := &sink{wantUser: "alice", wantPass: "tls-only-pw"}
	port := startSink(t, s, implicitServer)
	tr := openSMTP(t, "smtps://alice:tls-only-pw@127.0.0.1:"+port, Options{TLSConfig: clientTLS()})
	rc, err := tr.Send(sendCtx(t), testMessage())
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if !strings.HasPrefix(rc.Reply, "250") {
		t.Errorf("Reply = %q", rc.Reply)
	}
	if msgs := s.messages(); len(msgs) != 1 || !msgs[0].tls || msgs[0].pass != "tls-only-pw" {
		t.Fatalf("received %+v", msgs)
	}

	// Without the test CA the self-signed certificate must be refused.
	untrusted := openSMTP(t, "smtps://127.0.0.1:"+port, Options{})
	if _, err := untrusted.Send(sendCtx(t), testMessage()); err == nil || IsPermanent(err) {
		t.Errorf("Send with an untrusted certificate = %v, want a temporary error", err)
	}
}

func TestSMTPAuthFailureKeepsPasswordSecret(t *testing.T) {
	t.Parallel()
	s := &sink{wantUser: "bob", wantPass: "right"}
	port := startSink(t, s, startTLSServer)
	tr := openSMTP(t, "smtp://bob@127.0.0.1:"+port, Options{Password: "wrong-Pa55word", TLSConfig: clientTLS()})
	_, err := tr.Send(sendCtx(t), testMessage())
	if err == nil {
		t.Fatal("Send succeeded with a wrong password")
	}
	t.Logf("error: %v", err)
	if !strings.Contains(err.Error(), "535") {
		t.Errorf("error %q lacks the server reply", err)
	}
	if IsPermanent(err) {
		t.Errorf("AUTH failure is permanent; fixing the setting fixes every message: %v", err)
	}
	for _, form := range []string{"wrong-Pa55word", "d3JvbmctUGE1NXdvcmQ"} {
		if strings.Contains(err.Error(), form) {
			t.Errorf("error %q reveals the password", err)
		}
	}
}

func TestSMTPTemporaryReplyThenSuccess(t *testing.T) {
	t.Parallel()
	for _, stage := range []string{"RCPT", "DATA"} {
		t.Run(stage, func(t *testing.T) {
			t.Parallel()
			busy := &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Try again later"}
			s := &sink{}
			if stage == "RCPT" {
				s.rcptErrs = []error{busy}
			} else {
				s.dataErrs = []error{busy}
			}
			tr := openSMTP(t, "smtp://127.0.0.1:"+startSink(t, s, plainServer), Options{})
			_, err := tr.Send(sendCtx(t), testMessage())
			if err == nil || IsPermanent(err) {
				t.Fatalf("first Send = %v, want a temporary error", err)
			}
			if !strings.Contains(err.Error(), "451 4.3.0 Try again later") {
				t.Errorf("error %q lacks the reply", err)
			}
			var se *smtp.SMTPError
			if !errors.As(err, &se) || se.Code != 451 {
				t.Errorf("error does not wrap the *smtp.SMTPError: %v", err)
			}
			if _, err := tr.Send(sendCtx(t), testMessage()); err != nil {
				t.Fatalf("second Send: %v", err)
			}
			if n := len(s.messages()); n != 1 {
				t.Errorf("server holds %d messages, want 1", n)
			}
		})
	}
}

func TestSMTPPermanentReply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		stage string
		err   *smtp.SMTPError
		reply string
	}{
		{"RCPT", &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user"}, "550 5.1.1 No such user"},
		{"DATA", &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "Message rejected"}, "554 5.6.0 Message rejected"},
	}
	for _, tt := range tests {
		t.Run(tt.stage, func(t *testing.T) {
			t.Parallel()
			s := &sink{}
			if tt.stage == "RCPT" {
				s.rcptErrs = []error{tt.err}
			} else {
				s.dataErrs = []error{tt.err}
			}
			tr := openSMTP(t, "smtp://127.0.0.1:"+startSink(t, s, plainServer), Options{})
			_, err := tr.Send(sendCtx(t), testMessage())
			if !IsPermanent(err) {
				t.Fatalf("Send = %v, want a permanent error", err)
			}
			var pe *PermanentError
			errors.As(err, &pe)
			if pe.Reply != tt.reply {
				t.Errorf("Reply = %q, want %q", pe.Reply, tt.reply)
			}
			if !strings.Contains(err.Error(), tt.reply) {
				t.Errorf("error %q lacks the reply", err)
			}
		})
	}
}

func TestSMTPConnectionDroppedMidData(t *testing.T) {
	t.Parallel()
	s := &sink{dropData: true}
	tr := openSMTP(t, "smtp://127.0.0.1:"+startSink(t, s, plainServer), Options{})
	m := testMessage()
	m.Body = strings.Repeat("a long body line that keeps the client writing\n", 20000)
	_, err := tr.Send(sendCtx(t), m)
	if err == nil || IsPermanent(err) {
		t.Fatalf("Send = %v, want a temporary error", err)
	}
	t.Logf("error: %v", err)
}

func TestSMTPConnectionRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	tr := openSMTP(t, "smtp://"+addr, Options{})
	if _, err := tr.Send(sendCtx(t), testMessage()); err == nil || IsPermanent(err) {
		t.Fatalf("Send = %v, want a temporary error", err)
	}
}

func TestSMTPRespectsContextDeadline(t *testing.T) {
	t.Parallel()
	// A server that accepts and never greets.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	for _, url := range []string{"smtp://" + l.Addr().String(), "smtps://" + l.Addr().String()} {
		tr := openSMTP(t, url, Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		_, err = tr.Send(ctx, testMessage())
		cancel()
		if err == nil || IsPermanent(err) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: Send = %v, want a temporary deadline error", url, err)
		}
		t.Logf("%s: error: %v", url, err)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: Send took %v despite a 200ms deadline", url, d)
		}
	}
}

func TestSMTPInvalidMessageIsPermanent(t *testing.T) {
	t.Parallel()
	s := &sink{}
	tr := openSMTP(t, "smtp://127.0.0.1:"+startSink(t, s, plainServer), Options{})
	m := testMessage()
	m.Subject = "x\r\nBcc: victim@example.org"
	if _, err := tr.Send(sendCtx(t), m); !IsPermanent(err) || !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("Send = %v, want a permanent ErrInvalidMessage", err)
	}
	if n := len(s.messages()); n != 0 {
		t.Errorf("server received %d messages", n)
	}
}
