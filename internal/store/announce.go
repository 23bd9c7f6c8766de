package store

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Room changes are announced after they commit, not by a NOTIFY inside the
// changing transaction: PostgreSQL serializes the commits of every
// transaction that sends a NOTIFY under one database-wide lock held through
// the commit's WAL flush, so appends that each sent one stopped sharing
// WAL flushes (pgbench, the minimal append with fsync on: about 2,200 tps
// without a NOTIFY, 900 with one). Instead the committing replica wakes its
// own waiters at once, and a publisher sends the changed agreement ids of
// every commit since its last send in one statement on a connection of its
// own (synchronous_commit off: it writes no data, so it need not wait for
// a flush). A replica that stops between a commit and that send leaves the
// other replicas' waiters asleep until the agreement's next change or the
// end of their hold.

// announceSpacing is the shortest time between two sends: the most a
// wake-up on another replica waits for the commits after it to gather.
const announceSpacing = 5 * time.Millisecond

// notifyPayloadMax keeps one NOTIFY payload under PostgreSQL's 8,000 bytes.
const notifyPayloadMax = 7900

// announcer collects the agreements changed by commits on this replica.
type announcer struct {
	mu      sync.Mutex
	local   RoomListener // this replica's waiters; nil until ListenRooms
	pending map[uuid.UUID]struct{}
	kick    chan struct{}
	// publisher is the backend process id of the publisher's connection
	// (0 without one): the listener skips what it sent, since local
	// waiters were woken at the commit.
	publisher atomic.Uint32
}

func newAnnouncer() *announcer {
	return &announcer{pending: map[uuid.UUID]struct{}{}, kick: make(chan struct{}, 1)}
}

// changed is called once a change of agreement id has committed.
func (a *announcer) changed(id uuid.UUID) {
	a.mu.Lock()
	l := a.local
	if l != nil { // nobody publishes before ListenRooms: keep nothing
		a.pending[id] = struct{}{}
	}
	a.mu.Unlock()
	if l == nil {
		return
	}
	l.RoomChanged(id)
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

// setLocal makes l the listener told of this replica's own commits.
func (a *announcer) setLocal(l RoomListener) {
	a.mu.Lock()
	a.local = l
	a.mu.Unlock()
}

// publishRooms sends the pending announcements until ctx ends, one
// transaction at a time, retrying a failed send with what has accumulated.
func (s *Store) publishRooms(ctx context.Context, log *slog.Logger) {
	pause := listenRetryMin
	var ids []uuid.UUID
	var conn *pgx.Conn // its own connection: a busy pool must not delay a wake-up
	defer func() {
		if conn != nil {
			s.ann.publisher.Store(0)
			conn.Close(context.WithoutCancel(ctx))
		}
	}()
	for {
		if len(ids) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-s.ann.kick:
			}
		}
		ids = append(ids, s.ann.take()...)
		if len(ids) == 0 {
			continue
		}
		err := s.publisherConn(ctx, &conn)
		if err == nil {
			if err = s.notifyRooms(ctx, conn, ids); err != nil {
				s.ann.publisher.Store(0) // its process id may serve another replica next
				conn.Close(context.WithoutCancel(ctx))
				conn = nil // connect again on the next try
			}
		}
		if err == nil {
			ids, pause = ids[:0], listenRetryMin
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
		log.Warn("room notifications: announcing again", slog.String("error", interpretError("notify", err).Error()), slog.Duration("after", pause))
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, listenRetryMax)
	}
}

// notifyRooms sends ids on RoomChannel, comma-separated in as few payloads
// as fit, in one statement: its implicit transaction commits without
// waiting for a WAL flush (set_config is local to it).
func (s *Store) notifyRooms(ctx context.Context, conn *pgx.Conn, ids []uuid.UUID) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, err := conn.Exec(ctx, "SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, p) FROM unnest($2::text[]) AS p",
		RoomChannel, notifyPayloads(ids))
	return err
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

// publisherConn takes a connection out of the pool for the publisher when
// it has none.
func (s *Store) publisherConn(ctx context.Context, conn **pgx.Conn) error {
	if *conn != nil {
		return nil
	}
	actx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	c, err := s.pool.Acquire(actx)
	if err != nil {
		return err
	}
	*conn = c.Hijack()
	s.ann.publisher.Store((*conn).PgConn().PID())
	return nil
}

// parseRoomPayload reads the agreement ids of one notification.
func parseRoomPayload(payload string) []uuid.UUID {
	var ids []uuid.UUID
	for _, s := range strings.Split(payload, ",") {
		if id, err := uuid.Parse(s); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// roomChanged reports that a statement bumped agreement id's version.
func (q queries) roomChanged(id uuid.UUID) {
	if q.changed != nil {
		q.changed(id)
	}
}
