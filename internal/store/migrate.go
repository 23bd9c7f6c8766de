package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	consensus "github.com/consensus-md/consensus"
)

// Migrate applies pending migrations: River's own schema (its job queue)
// first, then ours, some of which use River's tables. Both run under one
// PostgreSQL session advisory lock, goose's, so concurrent replicas (and a
// replica still running goose alone during a rolling deploy) wait for each
// other instead of racing.
func Migrate(ctx context.Context, databaseURL string) error {
	cfg, err := pgxConfig(databaseURL)
	if err != nil {
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("store: migrate: connect: %w", err)
	}
	defer pool.Close()
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	return migrateDB(ctx, db, pool)
}

func migrateDB(ctx context.Context, db *sql.DB, pool *pgxpool.Pool) error {
	migrations, err := fs.Sub(consensus.Migrations, "db/migrations")
	if err != nil {
		return err
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	defer conn.Close()
	if err := locker.SessionLock(ctx, conn); err != nil {
		return fmt.Errorf("store: migrate: lock: %w", err)
	}
	defer func() { _ = locker.SessionUnlock(context.WithoutCancel(ctx), conn) }()

	rm, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return fmt.Errorf("store: river migrations: %w", err)
	}
	if _, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("store: migrate river: %w", err)
	}
	// The lock is held on conn; the provider must not take it again.
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations)
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	return nil
}

// RiverVersions lists River's schema migrations this build applies, for a
// test template named after everything Migrate would do.
func RiverVersions() []int {
	rm, err := rivermigrate.New(riverpgxv5.New(nil), nil)
	if err != nil {
		return nil
	}
	var v []int
	for _, m := range rm.AllVersions() {
		v = append(v, m.Version)
	}
	return v
}

// Pool is the store's connection pool, for River's client, which runs the
// job queue on the same database.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
