package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	consensus "github.com/consensus-md/consensus"
)

// Observer hears what the store committed, for metrics. Each call comes
// after the transaction that wrote the row has committed (at once for a
// statement outside a transaction), so an attempt that rolled back or was
// retried is never counted. The values come from closed sets (event
// actions, outcome statuses, the delivery results "sent", "retry" and
// "failed"), never an id or a credential. Calls must not block.
type Observer interface {
	// EventStored: an event with this action was appended to a room.
	EventStored(action string)
	// OutcomeSettled: an agreement's outcome became final with this status.
	OutcomeSettled(status string)
	// DeliveryAttempted: an outbox delivery attempt ended with this result.
	DeliveryAttempted(result string)
}

// Delivery results as DeliveryAttempted reports them.
const (
	DeliverySent   = "sent"
	DeliveryRetry  = "retry"
	DeliveryFailed = "failed"
)

type noteKind int

const (
	noteEvent noteKind = iota
	noteOutcome
	noteDelivery
)

// note is one committed fact on its way to the Observer.
type note struct {
	kind  noteKind
	value string
}

// note passes n to the store's observer, or keeps it until the
// transaction commits; without an observer it does nothing.
func (q queries) note(kind noteKind, value string) {
	if q.emit != nil {
		q.emit(note{kind, value})
	}
}

// delivered notes a delivery attempt's result once its mark succeeded.
func (q queries) delivered(err error, result, op string) error {
	if err == nil {
		q.note(noteDelivery, result)
	}
	return interpretError(op, err)
}

func tell(o Observer, n note) {
	switch n.kind {
	case noteEvent:
		o.EventStored(n.value)
	case noteOutcome:
		o.OutcomeSettled(n.value)
	case noteDelivery:
		o.DeliveryAttempted(n.value)
	}
}

// SetObserver makes o hear every committed event, final outcome and
// delivery attempt. Call it before the store is used.
func (s *Store) SetObserver(o Observer) {
	s.obs = o
	s.queries.emit = func(n note) { tell(o, n) }
}

// PoolStats are the connection pool's statistics (pgxpool.Stat): counts
// since the pool opened and the connections now in each state.
type PoolStats struct {
	AcquireCount, CanceledAcquireCount, EmptyAcquireCount             int64
	NewConnsCount, MaxLifetimeDestroyCount, MaxIdleDestroyCount       int64
	AcquireDuration, EmptyAcquireWaitTime                             time.Duration
	AcquiredConns, ConstructingConns, IdleConns, MaxConns, TotalConns int32
}

// PoolStats reads the pool's statistics; it does not touch the database.
func (s *Store) PoolStats() PoolStats {
	st := s.pool.Stat()
	return PoolStats{
		AcquireCount: st.AcquireCount(), CanceledAcquireCount: st.CanceledAcquireCount(), EmptyAcquireCount: st.EmptyAcquireCount(),
		NewConnsCount: st.NewConnsCount(), MaxLifetimeDestroyCount: st.MaxLifetimeDestroyCount(), MaxIdleDestroyCount: st.MaxIdleDestroyCount(),
		AcquireDuration: st.AcquireDuration(), EmptyAcquireWaitTime: st.EmptyAcquireWaitTime(),
		AcquiredConns: st.AcquiredConns(), ConstructingConns: st.ConstructingConns(), IdleConns: st.IdleConns(),
		MaxConns: st.MaxConns(), TotalConns: st.TotalConns(),
	}
}

// OutboxDepth counts the emails still to be sent (queued or
// retrying), in every replica's outbox: the outbox is one table.
func (s *Store) OutboxDepth(ctx context.Context) (int64, error) {
	n, err := s.q.OutboxCountPending(ctx)
	return n, interpretError("count pending outbox messages", err)
}

// schemaCheck is the migration provider SchemaCurrent asks, made once.
type schemaCheck struct {
	once     sync.Once
	db       *sql.DB
	provider *goose.Provider
	err      error
}

// SchemaCurrent returns nil when the database has every migration this
// binary embeds applied (a newer schema, left by a newer release that was
// rolled back, is current too: releases keep the schema usable by the one
// before). Otherwise it says which version the database is at; an
// unreachable database is an error as well.
func (s *Store) SchemaCurrent(ctx context.Context) error {
	c := &s.schema
	c.once.Do(func() {
		migrations, err := fs.Sub(consensus.Migrations, "db/migrations")
		if err != nil {
			c.err = err
			return
		}
		c.db = stdlib.OpenDBFromPool(s.pool)
		c.provider, c.err = goose.NewProvider(goose.DialectPostgres, c.db, migrations)
	})
	if c.err != nil {
		return fmt.Errorf("store: migrations: %w", c.err)
	}
	current, target, err := c.provider.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("store: schema version: %w", err)
	}
	if current < target {
		return fmt.Errorf("store: schema at version %d, this release needs %d: run consensusd migrate", current, target)
	}
	return nil
}
