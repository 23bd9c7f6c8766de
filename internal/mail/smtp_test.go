package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
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
