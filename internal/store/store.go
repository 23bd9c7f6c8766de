package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// Store is the connection pool. Each of its row methods, which Tx shares,
// runs one statement on its own; InTx runs several in one transaction.
type Store struct {
	queries
	pool *pgxpool.Pool
	ops  *pgxpool.Pool // operator transactions, each in one workspace (workspace.go)
	// lookupPool runs TokenOwners only, lookup its statement on it.
	lookupPool *pgxpool.Pool
	lookup     *dbsqlc.Queries
	timeout    time.Duration
	obs        Observer                        // see SetObserver (ops.go)
	onRoom     atomic.Pointer[func(uuid.UUID)] // see OnRoomCommitted (conn.go)
	schema     schemaCheck                     // see SchemaCurrent (ops.go)
	brk        breaker                         // see Suspect and Refusing (breaker.go)
}

// Tx is one transaction. It has every row method of Store, plus those that
// only mean something while a transaction holds its locks (AgreementLock,
// AgreementBump). The hot paths run their own pipelined transactions
// (Append).
type Tx struct {
	queries
	tx pgx.Tx
}

// queries binds the generated statements to a pool or a transaction. Its
// methods, promoted into Store and Tx, take and return room or store types
// and pass every error through interpretError, so callers never see a driver
// type or error.
type queries struct {
	q *dbsqlc.Queries
	// emit takes what was written for the Observer; nil without one.
	emit func(note)
	// changed takes the id of an agreement whose version a statement
	// bumped: the Store's announces at once (the statement committed on
	// its own), a Tx's after its commit.
	changed func(uuid.UUID)
}

// DefaultTimeout bounds connecting and each statement when Open is given
// no WithTimeout (CONSENSUS_DB_TIMEOUT's default).
const DefaultTimeout = 5 * time.Second

// Option tunes Open.
type Option func(*options)

type options struct{ timeout time.Duration }

// WithTimeout bounds how long the pool waits for the database: connecting
// (dial, TLS and start-up), each statement on the server
// (statement_timeout) and a rollback. Waiting for a pooled connection is
// bounded by the caller's context, which a request sets to the same
// timeout. A timeout of zero or less keeps DefaultTimeout.
func WithTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.timeout = d
		}
	}
}

func pgxConfig(databaseURL string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		// pgx errors can include the URL, and with it a password: say less.
		return nil, errors.New("store: DATABASE_URL is not a valid PostgreSQL connection URL")
	}
	cfg.AfterConnect = registerUUID
	// The pool's connections see the rows of every workspace: see
	// scopeService. The operator pool replaces this (workspace.go).
	cfg.ConnConfig.RuntimeParams[scopeParam] = scopeService
	cfg.ConnConfig.RuntimeParams[releaseParam] = release
	if !strings.Contains(databaseURL, "pool_max_conns") {
		// pgxpool's default, max(4, CPUs), lets a replica run only four
		// transactions at once: sixteen concurrent appends then queue for a
		// connection instead of sharing the WAL flushes of one commit
		// (make bench: the append rate ratio rose from about 0.3 to 0.45).
		cfg.MaxConns = DefaultMaxConns
	}
	return cfg, nil
}

// Every connection of this release carries releaseParam, a start-up
// parameter: migration 00029's trigger writes webhook deliveries only for
// a session without it, a replica of the previous release (v0.9.0), whose
// changes rely on a trigger to queue their deliveries. This release's code
// writes its own (queue.go). Any value will do; the next release, which
// drops the trigger, may drop the parameter too.
const (
	releaseParam = "consensus.release"
	release      = "0.10"
)

// DefaultMaxConns is the pool size when DATABASE_URL sets no pool_max_conns.
const DefaultMaxConns = 16

// bound applies the timeout to the serving pool's connections (not to
// Migrate's, whose DDL may rightly run long).
func bound(cfg *pgxpool.Config, timeout time.Duration) {
	// A database that accepts a connection but never answers (frozen, or
	// behind a black-holed network) must not hold a request longer than
	// the timeout; a connect_timeout in the URL may only shorten it.
	if cc := cfg.ConnConfig; cc.ConnectTimeout <= 0 || cc.ConnectTimeout > timeout {
		cc.ConnectTimeout = timeout
	}
	// The server ends a statement that runs (or waits for a lock) longer,
	// so a slow query frees its connection and its locks; the URL may set
	// its own.
	if _, ok := cfg.ConnConfig.RuntimeParams["statement_timeout"]; !ok {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(timeout.Milliseconds(), 10)
	}
}

// Open connects a pool and checks the server answers. Without options,
// DefaultTimeout bounds connecting and statements (see WithTimeout).
func Open(ctx context.Context, databaseURL string, opts ...Option) (*Store, error) {
	o := options{timeout: DefaultTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := pgxConfig(databaseURL)
	if err != nil {
		return nil, err
	}
	bound(cfg, o.timeout)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	look, err := lookupPool(ctx, cfg)
	if err != nil {
		pool.Close()
		return nil, err
	}
	ops, err := operatorPool(ctx, cfg)
	if err != nil {
		look.Close()
		pool.Close()
		return nil, err
	}
	s := &Store{pool: pool, ops: ops, lookupPool: look, lookup: dbsqlc.New(look), timeout: o.timeout}
	s.queries = queries{q: dbsqlc.New(pool), changed: s.roomCommitted}
	return s, nil
}

// Close closes the pools: whatever runs on them afterwards fails.
func (s *Store) Close() {
	s.brk.stop()
	s.lookupPool.Close()
	s.ops.Close()
	s.pool.Close()
}

// Timeout is the database timeout the store was opened with (WithTimeout):
// what a statement may take on the server.
func (s *Store) Timeout() time.Duration { return s.timeout }

// Ping checks the database answers within ctx.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// InTx runs fn in a transaction and commits it when fn returns nil. A
// serialization failure or deadlock retries the whole function (up to five
// times), so fn must not have effects outside the transaction. Errors fn
// returns come back unchanged; a failed commit is interpreted like any
// statement's error.
func (s *Store) InTx(ctx context.Context, fn func(tx *Tx) error) error {
	return s.retryTx(ctx, s.pool, pgx.TxOptions{}, fn)
}

// retryTx runs fn in transactions of pool begun with opts until one
// commits, fn fails otherwise than by a serialization failure or deadlock,
// or five attempts failed.
func (s *Store) retryTx(ctx context.Context, pool *pgxpool.Pool, opts pgx.TxOptions, fn func(tx *Tx) error) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = s.inTxOnce(ctx, pool, opts, fn)
		if !retryable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
	}
	return err
}

func (s *Store) inTxOnce(ctx context.Context, pool *pgxpool.Pool, opts pgx.TxOptions, fn func(tx *Tx) error) error {
	tx, err := pool.BeginTx(ctx, opts)
	if err != nil {
		return interpretError("begin", err)
	}
	// The rollback outlives a cancelled request (the transaction must end)
	// but not a frozen database: it gets its own bound.
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
		defer cancel()
		_ = tx.Rollback(rctx) // after Commit this is a no-op
	}()
	t := &Tx{queries: queries{q: dbsqlc.New(tx)}, tx: tx}
	var notes []note // told to the observer once committed
	if s.obs != nil {
		t.emit = func(n note) { notes = append(notes, n) }
	}
	var changed []uuid.UUID // announced once committed
	t.changed = func(id uuid.UUID) { changed = append(changed, id) }
	if err := fn(t); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return interpretError("commit", err)
	}
	for _, n := range notes {
		tell(s.obs, n)
	}
	for _, id := range changed {
		s.roomCommitted(id)
	}
	return nil
}

// Retryable reports a serialization failure or a deadlock: the transaction
// lost a race and may succeed when run again from the start.
func Retryable(err error) bool { return retryable(err) }

func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// interpretError is the one place driver errors become domain errors: no
// rows is room.ErrNotFound, a unique violation room.ErrConflict naming the
// constraint, and a database that is down, unreachable or too slow
// room.ErrUnavailable (see unavailable). Every error but the first two is
// wrapped with op and keeps its cause, so InTx still recognizes a
// serialization failure and the log shows what failed.
func interpretError(op string, err error) error {
	if err == nil || err == errQueued {
		return err // errQueued: a pipeline step being recorded, which add ignores; not worth wrapping
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return room.ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return fmt.Errorf("%w: %s", room.ErrConflict, pgErr.ConstraintName)
	}
	if unavailable(err) {
		return fmt.Errorf("store: %s: %w: %w", op, room.ErrUnavailable, err)
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// unavailable reports an error that says the database could not be reached
// or did not answer in time, as opposed to one about the statement: the
// request's deadline or cancellation, a failed or lost connection, and the
// server's own refusals (SQLSTATE class 08 connection exception, 53
// insufficient resources, 57 operator intervention: shutdown, start-up,
// statement_timeout).
func unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "53") || strings.HasPrefix(pgErr.Code, "57")
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
