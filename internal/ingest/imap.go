package ingest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
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

// maxFetchBatch bounds how many messages one Fetch downloads.
const maxFetchBatch = 25

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

// Fetch returns unseen messages not yet returned by this source, waiting for
// new mail when there are none. Connection errors are retried with backoff;
// it returns ctx's error, ErrClosed, or an *imap.Error from the server
// (wrapped) for a refusal such as failed authentication.
func (s *IMAPSource) Fetch(ctx context.Context) ([]RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.closed() {
			return nil, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		err := s.round(ctx)
		var msgs []RawMessage
		if err == nil {
			msgs, err = s.fetchUnseen(ctx)
			if err == nil && len(msgs) > 0 {
				s.backoff = 0
				return msgs, nil
			}
			if err == nil {
				s.backoff = 0
				err = s.wait(ctx)
			}
		}
		if err == nil {
			continue
		}
		switch {
		case s.closed():
			return nil, ErrClosed
		case ctx.Err() != nil:
			s.dropConn() // a command may have been cut short
			return nil, ctx.Err()
		case permanent(err):
			s.dropConn()
			return nil, err
		}
		s.dropConn()
		if err := s.sleepBackoff(ctx); err != nil {
			return nil, err
		}
	}
}

// round makes sure a connection exists.
func (s *IMAPSource) round(ctx context.Context) error {
	if s.conn() != nil {
		return nil
	}
	return s.connect(ctx)
}

func (s *IMAPSource) sleepBackoff(ctx context.Context) error {
	s.backoff = min(max(2*s.backoff, s.minBackoff), s.maxBackoff)
	d := s.backoff - time.Duration(rand.Int64N(int64(s.backoff)/5+1)) // up to 20% jitter
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return ErrClosed
	}
}

func (s *IMAPSource) fetchUnseen(ctx context.Context) ([]RawMessage, error) {
	c := s.conn()
	if c == nil {
		return nil, ErrClosed
	}
	stop := bind(ctx, c)
	defer stop()
	select { // notifications so far are covered by this search
	case <-s.newMail:
	default:
	}
	if err := c.Noop().Wait(); err != nil {
		return nil, fmt.Errorf("ingest: imap: noop: %w", err)
	}
	data, err := c.UIDSearch(&imap.SearchCriteria{NotFlag: []imap.Flag{imap.FlagSeen}}, nil).Wait()
	if err != nil {
		return nil, fmt.Errorf("ingest: imap: search: %w", err)
	}
	var uids []imap.UID
	for _, uid := range data.AllUIDs() {
		if _, ok := s.delivered[uid]; !ok && len(uids) < maxFetchBatch {
			uids = append(uids, uid)
		}
	}
	if len(uids) == 0 {
		return nil, nil
	}
	section := &imap.FetchItemBodySection{Peek: true}
	bufs, err := c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{
		UID:         true,
		BodySection: []*imap.FetchItemBodySection{section},
	}).Collect()
	if err != nil {
		return nil, fmt.Errorf("ingest: imap: fetch: %w", err)
	}
	var msgs []RawMessage
	for _, b := range bufs {
		body := b.FindBodySection(section)
		if b.UID == 0 || body == nil {
			continue // expunged meanwhile
		}
		s.delivered[b.UID] = struct{}{}
		msgs = append(msgs, RawMessage{ID: fmt.Sprintf("%d:%d", s.uidValidity, b.UID), Body: body})
	}
	return msgs, nil
}

// wait blocks until the server reports new mail (IDLE) or the poll interval
// passes.
func (s *IMAPSource) wait(ctx context.Context) error {
	c := s.conn()
	if c == nil {
		return ErrClosed
	}
	if !s.hasIdle {
		t := time.NewTimer(s.cfg.PollInterval)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		case <-s.done:
		case <-c.Closed():
			return errors.New("ingest: imap: connection closed")
		}
		return nil
	}
	idle, err := c.Idle()
	if err != nil {
		return fmt.Errorf("ingest: imap: idle: %w", err)
	}
	t := time.NewTimer(s.idleRecheck)
	defer t.Stop()
	lost := false
	select {
	case <-s.newMail:
	case <-t.C:
	case <-ctx.Done():
	case <-s.done:
	case <-c.Closed():
		lost = true
	}
	if lost {
		return errors.New("ingest: imap: connection closed during idle")
	}
	// Leaving IDLE (DONE, then the tagged OK) before ctx is bound: a
	// cancelled ctx is already reported by Fetch.
	if err := idle.Close(); err != nil {
		return fmt.Errorf("ingest: imap: idle: %w", err)
	}
	if err := idle.Wait(); err != nil {
		return fmt.Errorf("ingest: imap: idle: %w", err)
	}
	return nil
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
