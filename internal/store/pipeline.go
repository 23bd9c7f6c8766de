package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// A pipeline sends several generated statements in one round trip (a pgx
// batch: the server runs them in order, each seeing what the previous ones
// did) and reads their results with the same generated code. The hot paths
// use it so an append costs two round trips however many statements it runs.
//
// Each step calls exactly one generated method. add runs the step once
// against a recorder, which queues the statement and makes the method
// return errQueued; send runs every step again against the batch's results,
// in order, so each method scans its own result as if it had run alone.
type pipeline struct {
	batch pgx.Batch
	steps []step
	// jobs are River jobs to queue in the transaction; a statement of ours
	// cannot, so the transaction's owner inserts them through River's
	// client before its commit (pipedTx.insertJobs).
	jobs []river.JobArgs
}

// queueJob adds a job to queue through River's client in p's transaction.
func (p *pipeline) queueJob(args river.JobArgs) { p.jobs = append(p.jobs, args) }

// step runs one statement through db and keeps what it read. It returns its
// error already interpreted.
type step func(db dbsqlc.DBTX) error

// errQueued is what a generated method returns while a step is recorded.
var errQueued = errors.New("store: statement queued in a pipeline")

// add queues the statement step runs. A step that runs no statement, or
// more than one, is a programming error.
func (p *pipeline) add(s step) {
	n := p.batch.Len()
	_ = s(recorder{&p.batch})
	if p.batch.Len() != n+1 {
		panic("store: a pipeline step must run exactly one statement")
	}
	p.steps = append(p.steps, s)
}

// exec queues a statement without results, such as BEGIN or COMMIT.
func (p *pipeline) exec(sql string) {
	p.add(func(db dbsqlc.DBTX) error {
		_, err := db.Exec(context.Background(), sql)
		return interpretError(sql, err)
	})
}

// send runs the queued statements in one round trip on conn and hands each
// step its result. It returns the first error: once a statement fails the
// server skips the rest, and their steps see that error too.
func (p *pipeline) send(ctx context.Context, conn *pgxpool.Conn) error {
	br := conn.SendBatch(ctx, &p.batch)
	var first error
	for _, s := range p.steps {
		if err := s(results{br}); err != nil && first == nil {
			first = err
		}
	}
	if err := br.Close(); err != nil && first == nil {
		first = interpretError("pipeline", err)
	}
	return first
}

// recorder is the dbsqlc.DBTX of add: it queues each statement.
type recorder struct{ b *pgx.Batch }

func (r recorder) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.b.Queue(sql, args...)
	return pgconn.CommandTag{}, errQueued
}

func (r recorder) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.b.Queue(sql, args...)
	return nil, errQueued
}

func (r recorder) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	r.b.Queue(sql, args...)
	return queuedRow{}
}

type queuedRow struct{}

func (queuedRow) Scan(...any) error { return errQueued }

// results is the dbsqlc.DBTX of send: each call takes the next result of
// the batch, whatever statement the generated method names (add queued it).
type results struct{ br pgx.BatchResults }

func (r results) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) { return r.br.Exec() }
func (r results) Query(context.Context, string, ...any) (pgx.Rows, error)         { return r.br.Query() }
func (r results) QueryRow(context.Context, string, ...any) pgx.Row                { return r.br.QueryRow() }

// pipedTx is a transaction opened and closed by pipelines on one pooled
// connection: BEGIN travels with the first statements and COMMIT with the
// last, instead of taking a round trip each.
type pipedTx struct {
	conn *pgxpool.Conn
	// timeout bounds the rollback, as InTx's (the store's database timeout).
	timeout time.Duration
}

// beginPiped acquires a connection for a pipelined transaction.
func (s *Store) beginPiped(ctx context.Context) (*pipedTx, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, interpretError("acquire", err)
	}
	t := &pipedTx{conn: conn, timeout: s.timeout}
	if t.timeout <= 0 {
		t.timeout = DefaultTimeout
	}
	return t, nil
}

// send runs p on the transaction's connection.
func (t *pipedTx) send(ctx context.Context, p *pipeline) error { return p.send(ctx, t.conn) }

// close ends whatever transaction is still open (a failed statement, a
// refusal) with a rollback and returns the connection to the pool. A
// connection whose rollback fails is closed rather than reused.
func (t *pipedTx) close(ctx context.Context) {
	if t.conn == nil {
		return
	}
	if t.conn.Conn().PgConn().TxStatus() != 'I' && !t.conn.Conn().IsClosed() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.timeout)
		if _, err := t.conn.Exec(rctx, "ROLLBACK"); err != nil {
			_ = t.conn.Conn().Close(rctx)
		}
		cancel()
	}
	t.conn.Release()
	t.conn = nil
}
