package reply

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"

	"log/slog"
	"net"
	"net/mail"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/ingest"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/venue"
)

// MaxMessage is the largest reply read; a larger one is ignored unread:
// not authenticated, it gets no answer.
const MaxMessage = 1 << 20

// ProcessedMailbox is where a message goes once its result is committed.
const ProcessedMailbox = "Consensus Processed"

// lockKey is the advisory lock one reader across replicas holds.
const lockKey int64 = 0x636f6e7265706c79 // "conreply"

// Reader reads the reply mailbox and acts on each reply.
type Reader struct {
	Venue   *venue.Venue
	Store   *store.Store
	Keys    *secret.Keys
	IMAP    ingest.IMAPConfig
	Address string // the reply address, local@domain
	Lookup  LookupTXT
	Log     *slog.Logger
	// Poll bounds how long the mailbox goes unread: the wait between
	// searches without IDLE, and how long IDLE runs before searching again.
	Poll time.Duration
	// TLSConfig overrides the TLS settings of the IMAP connection.
	TLSConfig *tls.Config
}

// NewIMAPConfig reads the reply mailbox's URL and password.
func NewIMAPConfig(rawURL, password string) (ingest.IMAPConfig, error) {
	cfg, err := ingest.ParseIMAPURL(rawURL)
	if err != nil {
		return cfg, err
	}
	cfg.Password = password
	return cfg, nil
}

// Run reads until ctx ends: it waits for the advisory lock (another
// replica may hold it), then reads the mailbox while it holds it. A lost
// connection (IMAP or the lock's) ends the round and a new one starts.
func (r *Reader) Run(ctx context.Context) {
	if r.Poll <= 0 {
		r.Poll = 30 * time.Second
	}
	for ctx.Err() == nil {
		lock, err := r.Store.TryLock(ctx, lockKey)
		if err == nil && lock != nil {
			err = r.session(ctx, lock)
			lock.Release()
		}
		if err != nil && ctx.Err() == nil {
			r.Log.Warn("reply: mailbox round ended", slog.String("error", err.Error()))
		}
		select {
		case <-ctx.Done():
		case <-time.After(r.Poll):
		}
	}
}

// session reads the mailbox while lock is held.
func (r *Reader) session(ctx context.Context, lock *store.SessionLock) error {
	newMail := make(chan struct{}, 1)
	c, err := r.dial(newMail)
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if err := c.WaitGreeting(); err != nil {
		return err
	}
	if err := c.Login(r.IMAP.Username, r.IMAP.Password).Wait(); err != nil {
		return fmt.Errorf("reply: imap login: %w", err)
	}
	if err := c.Create(ProcessedMailbox, nil).Wait(); err != nil && !alreadyExists(err) {
		return fmt.Errorf("reply: create %s: %w", ProcessedMailbox, err)
	}
	if _, err := c.Select(r.IMAP.Mailbox, nil).Wait(); err != nil {
		return fmt.Errorf("reply: select: %w", err)
	}
	for ctx.Err() == nil {
		if !lock.Alive(ctx) {
			return errors.New("reply: the reader's lock connection was lost")
		}
		if err := r.drain(ctx, c); err != nil {
			return err
		}
		if err := r.wait(ctx, c, newMail); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func alreadyExists(err error) bool {
	var ie *imap.Error
	return errors.As(err, &ie) && (ie.Code == imap.ResponseCodeAlreadyExists || strings.Contains(strings.ToLower(ie.Text), "exists"))
}

func (r *Reader) dial(newMail chan struct{}) (*imapclient.Client, error) {
	tlsConfig := r.TLSConfig
	if tlsConfig == nil {
		tlsConfig = r.IMAP.TLSConfig
	}
	opts := &imapclient.Options{
		TLSConfig: tlsConfig,
		Dialer:    &net.Dialer{Timeout: 30 * time.Second},
		UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			Mailbox: func(d *imapclient.UnilateralDataMailbox) {
				if d.NumMessages != nil {
					select {
					case newMail <- struct{}{}:
					default:
					}
				}
			},
		},
	}
	switch {
	case r.IMAP.TLS:
		return imapclient.DialTLS(r.IMAP.Addr, opts)
	case r.IMAP.StartTLS:
		return imapclient.DialStartTLS(r.IMAP.Addr, opts)
	default:
		return imapclient.DialInsecure(r.IMAP.Addr, opts)
	}
}

// wait returns when new mail may have arrived: IDLE when offered, a pause
// of Poll otherwise.
func (r *Reader) wait(ctx context.Context, c *imapclient.Client, newMail chan struct{}) error {
	if !c.Caps().Has(imap.CapIdle) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.Poll):
			return nil
		}
	}
	idle, err := c.Idle()
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-newMail:
	case <-time.After(r.Poll):
	}
	if err := idle.Close(); err != nil {
		return err
	}
	return idle.Wait()
}

// drain acts on every message in the inbox, oldest first.
func (r *Reader) drain(ctx context.Context, c *imapclient.Client) error {
	found, err := c.UIDSearch(&imap.SearchCriteria{}, nil).Wait()
	if err != nil {
		return fmt.Errorf("reply: search: %w", err)
	}
	for _, uid := range found.AllUIDs() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := r.one(ctx, c, uid); err != nil {
			return err
		}
	}
	return nil
}

// one reads, acts on and then moves one message. An error from the
// database leaves the message in the inbox for the next round.
func (r *Reader) one(ctx context.Context, c *imapclient.Client, uid imap.UID) error {
	header := &imap.FetchItemBodySection{Specifier: imap.PartSpecifierHeader, Peek: true}
	msgs, err := c.Fetch(imap.UIDSetNum(uid), &imap.FetchOptions{RFC822Size: true, BodySection: []*imap.FetchItemBodySection{header}}).Collect()
	if err != nil {
		return fmt.Errorf("reply: fetch header: %w", err)
	}
	if len(msgs) != 1 {
		return nil // expunged meanwhile
	}
	var raw []byte
	oversize := msgs[0].RFC822Size > MaxMessage
	if oversize {
		raw = msgs[0].FindBodySection(header)
	} else {
		whole := &imap.FetchItemBodySection{Peek: true}
		full, err := c.Fetch(imap.UIDSetNum(uid), &imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{whole}}).Collect()
		if err != nil {
			return fmt.Errorf("reply: fetch: %w", err)
		}
		if len(full) != 1 {
			return nil
		}
		raw = full[0].FindBodySection(whole)
	}
	outcome, err := r.Handle(ctx, raw, oversize)
	if err != nil {
		return err
	}
	r.Log.Info("reply: message handled", slog.String("outcome", outcome))
	return r.move(c, uid)
}

// move takes a handled message out of the inbox: MOVE when offered,
// otherwise COPY, flag \Deleted and expunge.
func (r *Reader) move(c *imapclient.Client, uid imap.UID) error {
	set := imap.UIDSetNum(uid)
	if c.Caps().Has(imap.CapMove) {
		if _, err := c.Move(set, ProcessedMailbox).Wait(); err != nil {
			return fmt.Errorf("reply: move: %w", err)
		}
		return nil
	}
	if _, err := c.Copy(set, ProcessedMailbox).Wait(); err != nil {
		return fmt.Errorf("reply: copy: %w", err)
	}
	if err := c.Store(set, &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagDeleted}}, nil).Close(); err != nil {
		return fmt.Errorf("reply: flag deleted: %w", err)
	}
	if c.Caps().Has(imap.CapUIDPlus) {
		return c.UIDExpunge(set).Close()
	}
	return c.Expunge().Close()
}

// Handle acts on one message (raw is only its header when oversize) and
// says what it did: ignored (with why), refused or recorded. An error is
// a failure to be retried (the database); every verdict on the message is
// an outcome. Only a message whose DKIM signature proves it came from the
// invited address is acted on, and so answered: an oversize one is not
// read, so it is ignored unanswered, as is any message that does not
// authenticate.
func (r *Reader) Handle(ctx context.Context, raw []byte, oversize bool) (string, error) {
	fields, err := headerFields(raw)
	if err != nil {
		return "ignored: the header does not parse", nil
	}
	if why := autoReply(fields); why != "" {
		return "ignored: " + why, nil
	}
	if oversize {
		return fmt.Sprintf("ignored: larger than %d bytes, so not read and not authenticated", MaxMessage), nil
	}
	invitationID, ok := r.invitation(fields)
	if !ok {
		return "ignored: not addressed to an invitation's reply address", nil
	}
	inv, err := r.Venue.ReplyInvitation(ctx, invitationID)
	if errors.Is(err, room.ErrNotFound) {
		return "ignored: unknown invitation", nil
	}
	if err != nil {
		return "", err
	}
	ev, err := Authenticate(raw, inv.Email, r.Lookup)
	if err != nil {
		return "ignored: " + err.Error(), nil
	}
	messageID := headerValue(fields, "message-id")
	if messageID == "" {
		messageID = "sha256:" + ev.RawSHA256
	}
	in := venue.ReplyInput{Invitation: inv, MessageID: messageID, RawSHA256: ev.RawSHA256, Evidence: ev}
	text, err := Text(raw)
	if err != nil {
		in.Refusal = "the message has no readable text."
		return r.act(ctx, in)
	}
	intent := Read(NewText(text))
	in.Action, in.Digest, in.Body = intent.Action, intent.Digest, intent.Body
	switch {
	case intent.Action == room.ActionComment && intent.Body == "":
		in.Refusal = "the reply holds no new text above the quoted email."
	case len([]rune(intent.Body)) > room.MaxBody:
		in.Refusal = fmt.Sprintf("a comment holds at most %d characters.", room.MaxBody)
	}
	return r.act(ctx, in)
}

func (r *Reader) act(ctx context.Context, in venue.ReplyInput) (string, error) {
	res, err := r.Venue.Reply(ctx, in)
	switch {
	case err != nil:
		return "", err
	case !res.Acted:
		return "ignored: seen before or revoked", nil
	case res.Recorded:
		return "recorded " + in.Action, nil
	}
	return "refused: " + res.Reason, nil
}

// invitation finds the invitation named by the tag of the reply address in
// the To, Cc or Delivered-To fields.
func (r *Reader) invitation(fields []string) (uuid.UUID, bool) {
	local, domain, _ := strings.Cut(strings.ToLower(r.Address), "@")
	for _, name := range []string{"to", "cc", "delivered-to", "x-original-to"} {
		for _, f := range fields {
			if fieldName(f) != name {
				continue
			}
			_, v, _ := strings.Cut(f, ":")
			list, err := mail.ParseAddressList(strings.TrimSpace(unfoldField(v)))
			if err != nil {
				continue
			}
			for _, a := range list {
				l, d, _ := strings.Cut(strings.ToLower(a.Address), "@")
				base, tag, ok := strings.Cut(l, "+")
				if !ok || base != local || d != domain {
					continue
				}
				if id, ok := r.Keys.ReplyInvitation(tag); ok {
					return id, true
				}
			}
		}
	}
	return uuid.Nil, false
}

func headerValue(fields []string, name string) string {
	f := pick(fields, name, map[string]int{})
	_, v, _ := strings.Cut(f, ":")
	return strings.TrimSpace(unfoldField(v))
}

// autoReply says why a message is an automatic one (RFC 3834
// Auto-Submitted other than "no", Precedence bulk, list or junk, an empty
// return path), or "" for a message a person sent.
func autoReply(fields []string) string {
	if v := strings.ToLower(headerValue(fields, "auto-submitted")); v != "" && !strings.HasPrefix(v, "no") {
		return "Auto-Submitted: " + v
	}
	switch p := strings.ToLower(headerValue(fields, "precedence")); p {
	case "bulk", "list", "junk":
		return "Precedence: " + p
	}
	if f := pick(fields, "return-path", map[string]int{}); f != "" {
		if v := strings.TrimSpace(headerValue(fields, "return-path")); v == "<>" || v == "" {
			return "empty return path"
		}
	}
	return ""
}
