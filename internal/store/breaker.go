package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The breaker remembers that the database stopped answering, so that
// requests can be refused at once (503 with Retry-After) instead of each
// waiting out the whole timeout while the outage lasts. It trips only on
// proof: when work ran out of its time (Suspect), a probe opens a fresh
// connection and runs SELECT 1; a database that answers it, however busy,
// refuses nothing. One that does not stays refused until a later probe
// (every probeInterval) gets its answer.
type breaker struct {
	open    atomic.Bool
	probing atomic.Bool

	stopOnce sync.Once
	stopped  chan struct{} // closed by Close: no probe after it
	init     sync.Once

	mu      sync.Mutex
	tripped context.Context // ends when the breaker opens; renewed when it closes
	trip    context.CancelFunc
}

const (
	// probeTimeout bounds one probe (or the database timeout, if shorter):
	// a server that cannot take a new connection and answer SELECT 1
	// within it is not answering.
	probeTimeout = 500 * time.Millisecond
	// probeInterval separates the probes while the breaker is open.
	probeInterval = 500 * time.Millisecond
)

func (b *breaker) stopCh() chan struct{} {
	b.init.Do(func() { b.stopped = make(chan struct{}) })
	return b.stopped
}

func (b *breaker) stop() { b.stopOnce.Do(func() { close(b.stopCh()) }) }

// context returns the context that ends when the breaker next opens (or
// an ended one while it is open).
func (b *breaker) context() context.Context {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tripped == nil {
		b.tripped, b.trip = context.WithCancel(context.Background())
		if b.open.Load() {
			b.trip() // opened before anyone asked
		}
	}
	return b.tripped
}

func (b *breaker) set(open bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open.Store(open)
	switch {
	case open && b.trip != nil:
		b.trip()
	case !open && b.tripped != nil && b.tripped.Err() != nil:
		b.tripped, b.trip = nil, nil // the next context() starts afresh
	}
}

// Tripped returns a context that ends when the store finds the database
// not answering, so work already waiting for it can stop at once too.
func (s *Store) Tripped() context.Context { return s.brk.context() }

// Refusing reports whether the database is known not to answer: the last
// probe, started because work ran out of its time, got no answer, and no
// probe since has.
func (s *Store) Refusing() bool { return s.brk.open.Load() }

// Suspect tells the store that some work ran out of its time waiting for
// the database. Unless a probe is already running, one starts (see
// breaker); Suspect itself returns at once.
func (s *Store) Suspect() {
	if !s.brk.probing.CompareAndSwap(false, true) {
		return
	}
	go s.probeUntilAnswered()
}

func (s *Store) probeUntilAnswered() {
	defer s.brk.probing.Store(false)
	stopped := s.brk.stopCh()
	for {
		if s.probe(stopped) {
			s.brk.set(false)
			return
		}
		s.brk.set(true)
		select {
		case <-stopped:
			return
		case <-time.After(probeInterval):
		}
	}
}

// probe reports whether the database answers a fresh connection's
// SELECT 1 in time. An error the server itself sends (too many
// connections, say) is an answer: the database is up, if busy.
func (s *Store) probe(stopped <-chan struct{}) bool {
	ctx, cancel := context.WithTimeout(context.Background(), min(probeTimeout, s.timeout))
	defer cancel()
	go func() {
		select {
		case <-stopped:
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err == nil {
		_, err = conn.Exec(ctx, "SELECT 1")
		cctx, ccancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_ = conn.Close(cctx)
		ccancel()
	}
	var pgErr *pgconn.PgError
	return err == nil || errors.As(err, &pgErr)
}
