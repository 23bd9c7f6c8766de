package store_test

import (
	"context"
	"database/sql"
	"io/fs"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/store"
)

// TestQueuedWorkMovesToTheJobQueue: migrations 00010 and 00011 give every
// email and webhook delivery still to be made a job, due when it was due
// with its attempts carried over, and none to what was sent or given up.
func TestQueuedWorkMovesToTheJobQueue(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	pool := store.Pool(st)
	id, pid := agreement(t, st)
	invs, err := st.InvitationListByAgreement(ctx, id)
	if err != nil || len(invs) != 1 {
		t.Fatalf("invitations %+v, %v", invs, err)
	}
	inv := invs[0].ID
	now := time.Now().UTC()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	// The schema of the release before, and rows as it left them: no jobs.
	migrations, err := fs.Sub(consensus.Migrations, "db/migrations")
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 9); err != nil {
		t.Fatal(err)
	}
	pending, retrying, sent := uuid.New(), uuid.New(), uuid.New()
	for _, r := range []struct {
		id       uuid.UUID
		state    string
		attempts int
	}{{pending, "queued", 0}, {retrying, "retrying", 3}, {sent, "sent", 1}} {
		exec(`INSERT INTO outbox (id, invitation_id, agreement_id, recipient, subject, message_id, sealed_body, state, attempts, next_attempt_at, created_at)
			VALUES ($1, $2, $3, 'a@example.test', 's', $4, '\x00', $5, $6, $7, $7)`, r.id, inv, id, r.id.String()+"@test", r.state, r.attempts, now)
	}
	hookPending, hookDone := uuid.New(), uuid.New()
	for _, r := range []struct {
		id       uuid.UUID
		state    string
		attempts int
	}{{hookPending, "retrying", 2}, {hookDone, "delivered", 1}} {
		exec(`INSERT INTO webhook_deliveries (id, participant_id, agreement_id, invitation_id, type, seq, outcome, created_at, state, attempts, next_attempt_at)
			VALUES ($1, $2, $3, $4, 'room.event', 1, 'pending', $5, $6, $7, $5)`, r.id, pid, id, inv, now, r.state, r.attempts)
	}
	exec(`DELETE FROM river_job`)

	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}

	type job struct {
		kind, queue string
		attempt     int
		max         int
	}
	jobs := map[string]job{}
	rows, err := db.QueryContext(ctx, `SELECT kind, queue, attempt, max_attempts, coalesce(args->>'outbox_id', args->>'delivery_id') FROM river_job`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var j job
		var of sql.NullString
		if err := rows.Scan(&j.kind, &j.queue, &j.attempt, &j.max, &of); err != nil {
			t.Fatal(err)
		}
		jobs[of.String] = j
	}
	want := map[string]job{
		pending.String():     {"email", "email", 0, 12},
		retrying.String():    {"email", "email", 3, 12},
		hookPending.String(): {"webhook_delivery", "webhook", 2, 7},
	}
	if len(jobs) != len(want) {
		t.Fatalf("jobs %+v, want %+v", jobs, want)
	}
	for k, w := range want {
		if jobs[k] != w {
			t.Errorf("job of %s: %+v, want %+v", k, jobs[k], w)
		}
	}
}
