package ingest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
)

// IMAPSource reads unseen messages from one IMAP mailbox. It LOGINs, SELECTs,
// finds unseen messages with UID SEARCH NOT \Seen and downloads them with
// UID FETCH BODY.PEEK[] (so they stay unseen); MarkSeen is UID STORE
// +FLAGS (\Seen). Between rounds it waits with IDLE when the server offers
// it and polls otherwise. After a connection error it reconnects with
// exponential backoff capped at one minute. Message IDs are
// "<uidvalidity>:<uid>".
type IMAPSource struct {
	cfg         IMAPConfig
	minBackoff  time.Duration
	maxBackoff  time.Duration
	idleRecheck time.Duration

	mu          sync.Mutex // serializes Fetch and MarkSeen
	backoff     time.Duration
	uidValidity uint32
	hasIdle     bool
	delivered   map[imap.UID]struct{}
	newMail     chan struct{}

	connMu sync.Mutex // guards client, also taken by Close
	client *imapclient.Client

	done      chan struct{}
	closeOnce sync.Once
}

var _ Source = (*IMAPSource)(nil)

// NewIMAPSource validates cfg; it connects lazily, on the first Fetch.
func NewIMAPSource(cfg IMAPConfig) (*IMAPSource, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	recheck := max(cfg.PollInterval, 5*time.Minute)
	return &IMAPSource{
		cfg:         cfg,
		minBackoff:  time.Second,
		maxBackoff:  time.Minute,
		idleRecheck: recheck,
		delivered:   map[imap.UID]struct{}{},
		newMail:     make(chan struct{}, 1),
		done:        make(chan struct{}),
	}, nil
}

func (s *IMAPSource) conn() *imapclient.Client {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return s.client
}

func (s *IMAPSource) closed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// dropConn closes and forgets the current connection.
func (s *IMAPSource) dropConn() {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.client != nil {
		s.client.Close()
		s.client = nil
	}
}

// bind closes c when ctx ends, so a blocked command returns; call the
// returned stop when done.
func bind(ctx context.Context, c *imapclient.Client) (stop func() bool) {
	return context.AfterFunc(ctx, func() { c.Close() })
}

func (s *IMAPSource) connect(ctx context.Context) error {
	opts := &imapclient.Options{
		TLSConfig: s.cfg.TLSConfig,
		Dialer:    &net.Dialer{Timeout: 30 * time.Second},
		UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			Mailbox: func(d *imapclient.UnilateralDataMailbox) {
				if d.NumMessages != nil {
					select {
					case s.newMail <- struct{}{}:
					default:
					}
				}
			},
		},
	}
	var (
		c   *imapclient.Client
		err error
	)
	switch {
	case s.cfg.TLS:
		c, err = imapclient.DialTLS(s.cfg.Addr, opts)
	case s.cfg.StartTLS:
		c, err = imapclient.DialStartTLS(s.cfg.Addr, opts)
	default:
		c, err = imapclient.DialInsecure(s.cfg.Addr, opts)
	}
	if err != nil {
		return fmt.Errorf("ingest: imap: dial: %w", err)
	}
	stop := bind(ctx, c)
	defer stop()
	fail := func(step string, err error) error {
		c.Close()
		return fmt.Errorf("ingest: imap: %s: %w", step, err)
	}
	if err := c.WaitGreeting(); err != nil {
		return fail("greeting", err)
	}
	if err := c.Login(s.cfg.Username, s.cfg.Password).Wait(); err != nil {
		return fail("login", err)
	}
	sel, err := c.Select(s.cfg.Mailbox, nil).Wait()
	if err != nil {
		return fail("select", err)
	}
	if sel.UIDValidity != s.uidValidity {
		// A recreated mailbox renumbers its messages.
		s.uidValidity = sel.UIDValidity
		s.delivered = map[imap.UID]struct{}{}
	}
	s.hasIdle = c.Caps().Has(imap.CapIdle)
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.closed() {
		c.Close()
		return ErrClosed
	}
	s.client = c
	return nil
}

// permanent reports errors that reconnecting will not fix: the server
// refused a command (bad credentials, no such mailbox).
func permanent(err error) bool {
	var ie *imap.Error
	return errors.As(err, &ie)
}

// MarkSeen sets \Seen on the message. It connects when needed (no retry
// loop: the caller decides). Errors: ErrUnknownMessage for an ID this mailbox
// did not issue (for example after its UIDVALIDITY changed), ErrClosed, ctx's
// error, or a connection or server error.
func (s *IMAPSource) MarkSeen(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed() {
		return ErrClosed
	}
	validity, uidStr, ok := strings.Cut(id, ":")
	v, err1 := strconv.ParseUint(validity, 10, 32)
	u, err2 := strconv.ParseUint(uidStr, 10, 32)
	if !ok || err1 != nil || err2 != nil || u == 0 {
		return ErrUnknownMessage
	}
	if s.conn() == nil {
		if err := s.connect(ctx); err != nil {
			return err
		}
	}
	if uint32(v) != s.uidValidity {
		return ErrUnknownMessage
	}
	c := s.conn()
	stop := bind(ctx, c)
	defer stop()
	err := c.Store(imap.UIDSetNum(imap.UID(u)), &imap.StoreFlags{
		Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagSeen},
	}, nil).Close()
	if err != nil {
		if !permanent(err) {
			s.dropConn()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("ingest: imap: store: %w", err)
	}
	delete(s.delivered, imap.UID(u))
	return nil
}

// Close closes the connection and unblocks a pending Fetch. It returns nil.
func (s *IMAPSource) Close() error {
	s.closeOnce.Do(func() { close(s.done) })
	s.dropConn()
	return nil
}
