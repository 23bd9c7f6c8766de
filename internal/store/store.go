package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store/dbsqlc"
)

// Store is the connection pool with the generated queries bound to it.
type Store struct {
	*dbsqlc.Queries
	pool *pgxpool.Pool
}

// Tx is one transaction with the generated queries bound to it.
type Tx struct {
	*dbsqlc.Queries
	tx pgx.Tx
}

func pgxConfig(databaseURL string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		// pgx errors can include the URL, and with it a password: say less.
		return nil, errors.New("store: DATABASE_URL is not a valid PostgreSQL connection URL")
	}
	return cfg, nil
}

// Open connects a pool and checks the server answers.
func Open(ctx context.Context, databaseURL string) (*Store, error) {
	cfg, err := pgxConfig(databaseURL)
	if err != nil {
		return nil, err
	}
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
	return &Store{Queries: dbsqlc.New(pool), pool: pool}, nil
}

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// Ping checks the database answers within ctx.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// InTx runs fn in a transaction and commits it when fn returns nil. A
// serialization failure or deadlock retries the whole function (up to five
// times), so fn must not have effects outside the transaction.
func (s *Store) InTx(ctx context.Context, fn func(tx *Tx) error) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = s.inTxOnce(ctx, fn)
		if !retryable(err) {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
	}
	return err
}

func (s *Store) inTxOnce(ctx context.Context, fn func(tx *Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit this is a no-op
	if err := fn(&Tx{Queries: dbsqlc.New(tx), tx: tx}); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return Interpret(fmt.Errorf("store: commit: %w", err))
	}
	return nil
}

func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// Interpret maps driver errors to domain errors: no rows is room.ErrNotFound,
// a unique violation room.ErrConflict (wrapping the original). Other errors
// pass through unchanged.
func Interpret(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return room.ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return fmt.Errorf("%w: %s", room.ErrConflict, pgErr.ConstraintName)
	}
	return err
}
