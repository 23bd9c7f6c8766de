package servertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/contract"
	"github.com/consensus-md/consensus/internal/daemon"
	"github.com/consensus-md/consensus/internal/live"
	"github.com/consensus-md/consensus/internal/mailsink"
	"github.com/consensus-md/consensus/internal/secret"
)

// Mail is where the daemon delivers the invitations it sends.
type Mail int

const (
	// MailMaildir files each message into a Maildir (Server.Maildir).
	MailMaildir Mail = iota
	// MailSMTP sends each message over SMTP to an in-process mailsink
	// (Server.Sink), which files it into the recipient's IMAP INBOX.
	MailSMTP
)

// Options describe one in-process consensusd. The zero value, with a
// DatabaseURL, is a complete configuration.
type Options struct {
	// DatabaseURL is the PostgreSQL database to migrate and serve; Start
	// requires it, New fills in a fresh pgtest database.
	DatabaseURL string
	// Origin is the public origin the daemon publishes; empty means the
	// URL it listens on (or, with Localhost, localhost on its port).
	// Replicas share one.
	Origin string
	// Localhost publishes http://localhost:PORT, a make run's kind of
	// origin, which passkeys accept where an IP address is refused.
	Localhost bool
	// OperatorToken is the bearer token of the operator API; empty means
	// a random one (Server.OperatorToken).
	OperatorToken string
	// TokenKey is CONSENSUS_TOKEN_KEY (hex); empty means a random key.
	// Replicas share one, so that a token one issues verifies on the other.
	TokenKey string
	// SigningKey is CONSENSUS_SIGNING_KEY (a 32-byte seed in hex, or a
	// PKCS#8 PEM key); empty means none, and the daemon makes one for its
	// process, as a local run without one does.
	SigningKey string
	// RateLimit is exchange and claim requests a minute per client and
	// route; 0 turns the limit off.
	RateLimit int
	// Mail chooses the transport; MailMaildir by default.
	Mail Mail
	// Maildir, with MailMaildir, is the directory to deliver to; empty
	// means a fresh one that Close removes.
	Maildir string
	// Sink, with MailSMTP, is a running mailsink to deliver to; nil starts
	// one that Close stops.
	Sink *mailsink.Server
	// Report receives each contract violation of Client's traffic (a
	// test passes itself); nil keeps them for Close to return.
	Report contract.Reporter
	// SendTimeout bounds one email's delivery attempt (the outbox worker's
	// SendTimeout); zero keeps its default, a minute.
	SendTimeout time.Duration
	// Settings are further consensusd settings (CONSENSUS_WEBHOOK_CA_FILE,
	// say), applied over the ones above.
	Settings map[string]string
	// BeforeJoin runs in each held read of a participant's room just
	// before it joins the live hub (httpapi.Options.BeforeJoin).
	BeforeJoin func(agreementID uuid.UUID, hub *live.Hub)
}

// Server is one consensusd running in this process.
type Server struct {
	// URL is where this replica listens: http://127.0.0.1:PORT.
	URL string
	// OpsURL is its operations listener: /metrics, /livez, /readyz.
	OpsURL string
	// Origin is the public origin it publishes (URL unless set).
	Origin string
	// DatabaseURL is the database it serves.
	DatabaseURL string
	// OperatorToken is the bearer token of its operator API.
	OperatorToken string
	// Maildir is the directory its mail goes to (MailMaildir), else "".
	Maildir string
	// Sink is the SMTP and IMAP pair its mail goes to (MailSMTP), else nil.
	Sink *mailsink.Server
	// Clock is its clock: real time until a test advances it.
	Clock *Clock
	// Logs holds its JSON log lines.
	Logs *Logs
	// Client sends requests through the contract-validating transport.
	Client *http.Client

	opts      Options // as completed by Start, for ReplicaOptions
	recorder  *contract.Recorder
	stop      context.CancelFunc
	done      chan error
	release   []func() // what Start created, undone by Close in reverse
	closeOnce sync.Once
	closeErr  error
}

// Start runs consensusd in-process on 127.0.0.1:0 and returns once it
// serves. ctx bounds the start (migrations included), not the run: the
// daemon serves until Close. It fails when DatabaseURL is empty, the
// configuration is refused, the mail transport cannot start or the daemon
// stops before serving.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.DatabaseURL == "" {
		return nil, errors.New("servertest: Options.DatabaseURL is required")
	}
	s := &Server{Clock: &Clock{}, Logs: &Logs{}}
	if err := s.start(ctx, opts); err != nil {
		s.undo()
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, opts Options) error {
	if opts.OperatorToken == "" {
		opts.OperatorToken = secret.NewOperatorToken()
	}
	if opts.TokenKey == "" {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		opts.TokenKey = hex.EncodeToString(key)
	}
	mailURL, err := s.openMail(&opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("servertest: listen: %w", err)
	}
	s.release = append(s.release, func() { ln.Close() })
	s.URL = "http://" + ln.Addr().String()
	opsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("servertest: listen: %w", err)
	}
	s.release = append(s.release, func() { opsLn.Close() })
	s.OpsURL = "http://" + opsLn.Addr().String()
	if opts.Origin == "" && opts.Localhost {
		opts.Origin = "http://localhost:" + strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:")
	}
	if opts.Origin == "" {
		opts.Origin = s.URL
	}
	// The settings go through config.Load, as consensusd's do.
	env := map[string]string{
		"CONSENSUS_ENV": "local", "DATABASE_URL": opts.DatabaseURL, "CONSENSUS_LISTEN": ln.Addr().String(),
		"CONSENSUS_PUBLIC_ORIGIN": opts.Origin, "CONSENSUS_OPERATOR_TOKEN": opts.OperatorToken,
		"CONSENSUS_TOKEN_KEY": opts.TokenKey, "CONSENSUS_MAIL_URL": mailURL,
		"CONSENSUS_RATE_LIMIT": strconv.Itoa(opts.RateLimit), "CONSENSUS_OUTBOX_POLL": "20ms",
		"CONSENSUS_OPS_LISTEN": opsLn.Addr().String(), "CONSENSUS_SIGNING_KEY": opts.SigningKey,
	}
	for k, v := range opts.Settings {
		env[k] = v
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		return fmt.Errorf("servertest: %w", err)
	}
	cfg.Version = "test"

	// Every request and response through Client is checked against the
	// published openapi.json: an undocumented status, header or field is
	// a violation.
	v, err := contract.Load(consensus.OpenAPI, opts.Origin)
	if err != nil {
		return err
	}
	report := opts.Report
	if report == nil {
		s.recorder = &contract.Recorder{}
		report = s.recorder
	}
	s.Client = &http.Client{Timeout: 30 * time.Second, Transport: v.Transport(report, &http.Transport{MaxIdleConnsPerHost: 64})}
	s.Origin, s.DatabaseURL, s.OperatorToken, s.opts = opts.Origin, opts.DatabaseURL, opts.OperatorToken, opts

	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop, s.done = stop, make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		s.done <- daemon.Run(runCtx, cfg, slog.New(slog.NewJSONHandler(s.Logs, nil)), daemon.Options{Listener: ln, OpsListener: opsLn, Ready: ready, Now: s.Clock.Now, BeforeJoin: opts.BeforeJoin,
			Outbox: struct{ BaseBackoff, MaxBackoff, SendTimeout time.Duration }{SendTimeout: opts.SendTimeout}})
	}()
	select {
	case <-ready:
		return nil
	case err := <-s.done:
		if err == nil {
			err = errors.New("no error given")
		}
		return fmt.Errorf("servertest: consensusd stopped before serving: %w", err)
	case <-ctx.Done():
		stop()
		<-s.done
		return fmt.Errorf("servertest: consensusd did not start: %w", ctx.Err())
	}
}

// openMail prepares the transport opts ask for and returns its
// CONSENSUS_MAIL_URL.
func (s *Server) openMail(opts *Options) (string, error) {
	switch opts.Mail {
	case MailSMTP:
		if opts.Sink == nil {
			sink, err := mailsink.Start()
			if err != nil {
				return "", fmt.Errorf("servertest: %w", err)
			}
			s.release = append(s.release, func() { sink.Close() })
			opts.Sink = sink
		}
		s.Sink = opts.Sink
		return opts.Sink.SMTPURL(), nil
	case MailMaildir:
		if opts.Maildir == "" {
			dir, err := os.MkdirTemp("", "consensus-maildir-")
			if err != nil {
				return "", fmt.Errorf("servertest: maildir: %w", err)
			}
			s.release = append(s.release, func() { os.RemoveAll(dir) })
			opts.Maildir = dir
		}
		dir, err := filepath.Abs(opts.Maildir)
		if err != nil {
			return "", fmt.Errorf("servertest: maildir: %w", err)
		}
		opts.Maildir, s.Maildir = dir, dir
		return "maildir://" + dir, nil
	}
	return "", fmt.Errorf("servertest: unknown Mail %d", opts.Mail)
}

// ReplicaOptions are the options of a second consensusd behind this one's
// public origin: the same database, mail drop, operator token, token key
// and rate limit. The replica has its own clock, logs and client.
func (s *Server) ReplicaOptions() Options {
	o := s.opts
	o.Report = nil
	return o
}

// Close stops the daemon (gracefully, as on SIGTERM) and undoes what Start
// created: the listener, a fresh Maildir, a mailsink it started. It
// returns the daemon's error and, when Options.Report was nil, every
// contract violation of Client's traffic. Later calls return the same.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.stop()
		var err error
		if e := <-s.done; e != nil {
			err = fmt.Errorf("servertest: consensusd: %w", e)
		}
		s.Client.CloseIdleConnections()
		s.undo()
		if s.recorder != nil {
			err = errors.Join(err, s.recorder.Err())
		}
		s.closeErr = err
	})
	return s.closeErr
}

// undo releases what start created, newest first, once the daemon has
// stopped.
func (s *Server) undo() {
	for i := len(s.release) - 1; i >= 0; i-- {
		s.release[i]()
	}
	s.release = nil
}
