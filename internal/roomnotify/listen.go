// Package roomnotify tells every replica's waiters that a room changed: a
// replica hears its own commits at once, and those of the other replicas
// through PostgreSQL's LISTEN/NOTIFY, on connections of their own taken
// from the store (store.Conn).
package roomnotify

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/store"
)

// Channel is the channel on which every replica announces, after the
// commit, the agreements whose version its commits changed (see
// announce.go); a payload is their ids, comma-separated.
const Channel = "consensus_room"

// Listener hears about committed room changes; see Listen.
type Listener interface {
	// RoomChanged is called for every notification: the agreement has a
	// new version.
	RoomChanged(agreementID uuid.UUID)
	// RoomsResumed is called whenever listening (re)starts: changes
	// committed while no connection listened were not announced, so
	// everything must be checked again.
	RoomsResumed()
}

// WorkspaceListener is a Listener that also hears of the workspace
// changes no room shows (an operator removed or given another role),
// which transactions announce on store.WorkspaceChannel as they commit.
type WorkspaceListener interface {
	Listener
	WorkspaceChanged(workspaceID uuid.UUID)
}

// retry bounds the pause between attempts to listen or announce again.
const (
	retryMin = 50 * time.Millisecond
	retryMax = 2 * time.Second
	// quiet is how long the listening connection may hear nothing before
	// it is pinged.
	quiet = 30 * time.Second
)

// Listen listens on Channel through one dedicated connection of st until
// ctx ends. When the connection fails it connects again (after a pause
// that grows from 50 ms to 2 s) and calls RoomsResumed once it listens
// again, so no change goes unseen. From the call on, l also hears of the
// commits made through st at once, and they are announced to the other
// replicas. It returns when ctx ends. One Listen runs per store at a time.
func Listen(ctx context.Context, st *store.Store, l Listener, log *slog.Logger) {
	a := newAnnouncer(l)
	st.OnRoomCommitted(a.changed)
	defer st.OnRoomCommitted(nil)
	done := make(chan struct{})
	defer func() { <-done }()
	go func() { defer close(done); a.publish(ctx, st, log) }()
	pause := retryMin
	for ctx.Err() == nil {
		heard, err := listenOnce(ctx, st, a, l)
		if ctx.Err() != nil {
			return
		}
		if heard {
			pause = retryMin
		}
		log.Warn("room notifications: listening again", slog.String("error", err.Error()), slog.Duration("after", pause))
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, retryMax)
	}
}

// listenOnce listens on one connection until it fails. heard reports that
// it got as far as listening.
func listenOnce(ctx context.Context, st *store.Store, a *announcer, l Listener) (heard bool, err error) {
	conn, err := st.Conn(ctx) // the connection leaves the pool: it is closed here
	if err != nil {
		return false, err
	}
	defer conn.Close(ctx)
	if err := conn.Listen(ctx, Channel); err != nil {
		return false, err
	}
	if err := conn.Listen(ctx, store.WorkspaceChannel); err != nil {
		return false, err
	}
	l.RoomsResumed()
	for {
		// A connection that died silently never returns from the wait: a
		// quiet period ends in a ping, which a dead connection fails.
		waitCtx, cancel := context.WithTimeout(ctx, quiet)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		if err != nil && ctx.Err() == nil && waitCtx.Err() != nil {
			if err = conn.Ping(ctx); err == nil {
				continue
			}
		}
		if err != nil {
			return true, err
		}
		if n.Channel == store.WorkspaceChannel {
			if id, err := uuid.Parse(n.Payload); err == nil {
				if wl, ok := l.(WorkspaceListener); ok {
					wl.WorkspaceChanged(id)
				}
			}
			continue
		}
		if n.PID == a.publisher.Load() {
			continue // this replica's own announcement: its waiters woke at the commit
		}
		for _, id := range parsePayload(n.Payload) {
			l.RoomChanged(id)
		}
	}
}
