package roomnotify

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/store"
)

// Room changes are announced after they commit, not by a NOTIFY inside the
// changing transaction: PostgreSQL serializes the commits of every
// transaction that sends a NOTIFY under one database-wide lock held through
// the commit's WAL flush, so appends that each sent one stopped sharing
// WAL flushes (pgbench, the minimal append with fsync on: about 2,200 tps
// without a NOTIFY, 900 with one). Instead the committing replica wakes its
// own waiters at once (store.OnRoomCommitted), and a publisher sends the
// changed agreement ids of every commit since its last send in one
// statement on a connection of its own (synchronous_commit off: it writes
// no data, so it need not wait for a flush). A replica that stops between
// a commit and that send leaves the other replicas' waiters asleep until
// the agreement's next change or the end of their hold.

// announceSpacing is the shortest time between two sends: the most a
// wake-up on another replica waits for the commits after it to gather.
const announceSpacing = 5 * time.Millisecond

// notifyPayloadMax keeps one NOTIFY payload under PostgreSQL's 8,000 bytes.
const notifyPayloadMax = 7900

// announcer collects the agreements changed by commits on this replica.
type announcer struct {
	mu      sync.Mutex
	local   Listener // this replica's waiters
	pending map[uuid.UUID]struct{}
	kick    chan struct{}
	// publisher is the backend process id of the publisher's connection
	// (0 without one): the listener skips what it sent, since local
	// waiters were woken at the commit.
	publisher atomic.Uint32
}

func newAnnouncer(local Listener) *announcer {
	return &announcer{local: local, pending: map[uuid.UUID]struct{}{}, kick: make(chan struct{}, 1)}
}

// changed is called once a change of agreement id has committed.
func (a *announcer) changed(id uuid.UUID) {
	a.mu.Lock()
	a.pending[id] = struct{}{}
	a.mu.Unlock()
	a.local.RoomChanged(id)
	select {
	case a.kick <- struct{}{}:
	default: // a send is already due
	}
}

// take empties the pending set.
func (a *announcer) take() []uuid.UUID {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := make([]uuid.UUID, 0, len(a.pending))
	for id := range a.pending {
		ids = append(ids, id)
	}
	clear(a.pending)
	return ids
}

// publish sends the pending announcements on st until ctx ends, one
// transaction at a time, retrying a failed send with what has accumulated.
func (a *announcer) publish(ctx context.Context, st *store.Store, log *slog.Logger) {
	pause := retryMin
	var ids []uuid.UUID
	var conn *store.Conn // its own connection: a busy pool must not delay a wake-up
	defer func() {
		if conn != nil {
			a.publisher.Store(0)
			conn.Close(ctx)
		}
	}()
	for {
		if len(ids) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-a.kick:
			}
		}
		ids = append(ids, a.take()...)
		if len(ids) == 0 {
			continue
		}
		var err error
		if conn == nil {
			if conn, err = st.Conn(ctx); err == nil {
				a.publisher.Store(conn.PID())
			}
		}
		if err == nil {
			if err = conn.Notify(ctx, Channel, notifyPayloads(ids)); err != nil {
				a.publisher.Store(0) // its process id may serve another replica next
				conn.Close(ctx)
				conn = nil // connect again on the next try
			}
		}
		if err == nil {
			ids, pause = ids[:0], retryMin
			// Let the next commits gather: under load one send then
			// carries many ids, at most every announceSpacing.
			select {
			case <-ctx.Done():
				return
			case <-time.After(announceSpacing):
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("room notifications: announcing again", slog.String("error", err.Error()), slog.Duration("after", pause))
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, retryMax)
	}
}

// notifyPayloads joins ids with commas into payloads of at most
// notifyPayloadMax bytes.
func notifyPayloads(ids []uuid.UUID) []string {
	var out []string
	var b strings.Builder
	for _, id := range ids {
		if b.Len() > 0 && b.Len()+1+36 > notifyPayloadMax {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(id.String())
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// parsePayload reads the agreement ids of one notification.
func parsePayload(payload string) []uuid.UUID {
	var ids []uuid.UUID
	for _, s := range strings.Split(payload, ",") {
		if id, err := uuid.Parse(s); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}
