package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
)

// RoomChannel is the channel on which every replica announces, after the
// commit, the agreements whose version its commits changed (see
// announce.go); a payload is their ids, comma-separated.
const RoomChannel = "consensus_room"

// RoomListener hears about committed room changes; see Store.ListenRooms.
type RoomListener interface {
	// RoomChanged is called for every notification: the agreement has a
	// new version.
	RoomChanged(agreementID uuid.UUID)
	// RoomsResumed is called whenever listening (re)starts: changes
	// committed while no connection listened were not announced, so
	// everything must be checked again.
	RoomsResumed()
}

// listenRetry bounds the pause between attempts to listen again.
const (
	listenRetryMin = 50 * time.Millisecond
	listenRetryMax = 2 * time.Second
	// listenQuiet is how long the listening connection may hear nothing
	// before it is pinged.
	listenQuiet = 30 * time.Second
)

// ListenRooms listens on RoomChannel through one dedicated connection,
// taken out of the pool, until ctx ends. When the connection fails it
// connects again (after a pause that grows from 50 ms to 2 s) and calls
// RoomsResumed once it listens again, so no change goes unseen. From the
// call on, l also hears of this replica's own commits at once, and they are
// announced to the other replicas. It returns when ctx ends.
func (s *Store) ListenRooms(ctx context.Context, l RoomListener, log *slog.Logger) {
	s.ann.setLocal(l)
	defer s.ann.setLocal(nil)
	done := make(chan struct{})
	defer func() { <-done }()
	go func() { defer close(done); s.publishRooms(ctx, log) }()
	pause := listenRetryMin
	for ctx.Err() == nil {
		heard, err := s.listenOnce(ctx, l)
		if ctx.Err() != nil {
			return
		}
		if heard {
			pause = listenRetryMin
		}
		log.Warn("room notifications: listening again", slog.String("error", interpretError("listen", err).Error()), slog.Duration("after", pause))
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, listenRetryMax)
	}
}

// listenOnce listens on one connection until it fails. heard reports that
// it got as far as listening.
func (s *Store) listenOnce(ctx context.Context, l RoomListener) (heard bool, err error) {
	acquireCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	c, err := s.pool.Acquire(acquireCtx)
	if err != nil {
		return false, err
	}
	conn := c.Hijack() // the connection leaves the pool: it is closed here
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(acquireCtx, "LISTEN "+RoomChannel); err != nil {
		return false, err
	}
	l.RoomsResumed()
	for {
		// A connection that died silently never returns from the wait: a
		// quiet period ends in a ping, which a dead connection fails.
		waitCtx, cancel := context.WithTimeout(ctx, listenQuiet)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		if err != nil && ctx.Err() == nil && waitCtx.Err() != nil {
			pingCtx, cancel := context.WithTimeout(ctx, s.timeout)
			err = conn.Ping(pingCtx)
			cancel()
			if err == nil {
				continue
			}
		}
		if err != nil {
			return true, err
		}
		if n.PID == s.ann.publisher.Load() {
			continue // this replica's own announcement: its waiters woke at the commit
		}
		for _, id := range parseRoomPayload(n.Payload) {
			l.RoomChanged(id)
		}
	}
}
