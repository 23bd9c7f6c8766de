package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// OnRoomCommitted makes f hear the id of every agreement whose version a
// commit through this store changed, right after that commit, on the
// committing goroutine; nil stops it. f must return quickly.
func (s *Store) OnRoomCommitted(f func(agreementID uuid.UUID)) {
	if f == nil {
		s.onRoom.Store(nil)
		return
	}
	s.onRoom.Store(&f)
}

// roomCommitted tells OnRoomCommitted's function of a committed change.
func (s *Store) roomCommitted(id uuid.UUID) {
	if f := s.onRoom.Load(); f != nil {
		(*f)(id)
	}
}

// roomChanged reports that a statement bumped agreement id's version: the
// Store's queries tell at once (the statement committed on its own), a
// Tx's after its commit.
func (q queries) roomChanged(id uuid.UUID) {
	if q.changed != nil {
		q.changed(id)
	}
}

// Conn is a connection of its own, taken out of the pool, for LISTEN and
// NOTIFY: a busy pool must not delay them, and a listening session must
// outlive any request. Its methods interpret errors as the store's do.
type Conn struct {
	c       *pgx.Conn
	timeout time.Duration
}

// Notification is one NOTIFY heard on a Conn.
type Notification struct {
	// PID is the backend process id of the connection that sent it.
	PID     uint32
	Channel string
	Payload string
}

// Conn takes a connection out of the pool; the caller closes it.
func (s *Store) Conn(ctx context.Context) (*Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, interpretError("acquire", err)
	}
	return &Conn{c: c.Hijack(), timeout: s.timeout}, nil
}

// PID is the backend process id of the connection: the PID of the
// notifications it sends.
func (c *Conn) PID() uint32 { return c.c.PgConn().PID() }

// Listen subscribes the connection to channel, a trusted identifier.
func (c *Conn) Listen(ctx context.Context, channel string) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	_, err := c.c.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize())
	return interpretError("listen", err)
}

// WaitForNotification waits for the next notification on the channels
// the connection listens on, until ctx ends.
func (c *Conn) WaitForNotification(ctx context.Context) (Notification, error) {
	n, err := c.c.WaitForNotification(ctx)
	if err != nil {
		return Notification{}, interpretError("wait for notification", err)
	}
	return Notification{PID: n.PID, Channel: n.Channel, Payload: n.Payload}, nil
}

// Ping checks the connection still answers.
func (c *Conn) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return interpretError("ping", c.c.Ping(ctx))
}

// Notify sends each payload on channel in one statement, whose implicit
// transaction commits without waiting for a WAL flush (synchronous_commit
// off, local to it): a notification writes no data.
func (c *Conn) Notify(ctx context.Context, channel string, payloads []string) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	_, err := c.c.Exec(ctx, "SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, p) FROM unnest($2::text[]) AS p",
		channel, payloads)
	return interpretError("notify", err)
}

// Close closes the connection, even when ctx has ended.
func (c *Conn) Close(ctx context.Context) { _ = c.c.Close(context.WithoutCancel(ctx)) }
