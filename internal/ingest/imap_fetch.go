package ingest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/emersion/go-imap/v2"
)

// maxFetchBatch bounds how many messages one Fetch downloads.
const maxFetchBatch = 25

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
