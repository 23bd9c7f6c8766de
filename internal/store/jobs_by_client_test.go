package store_test

import (
	"bytes"
	"context"
	"io/fs"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/store"
)

// ours lists our functions and triggers (not River's own, named river_…)
// whose SQL names River's job table or its insert notification.
const ours = `
SELECT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = current_schema() AND p.proname NOT LIKE 'river\_%'
  AND (p.prosrc ILIKE '%river\_job%' OR p.prosrc ILIKE '%river\_insert%')
UNION ALL
SELECT t.tgname::text FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid JOIN pg_class c ON c.oid = t.tgrelid
WHERE NOT t.tgisinternal AND c.relname NOT LIKE 'river\_%'
  AND (p.prosrc ILIKE '%river\_job%' OR p.prosrc ILIKE '%river\_insert%')
ORDER BY 1`

// migrateDown takes st's database down to migration version and returns
// the provider that takes it up again.
func migrateDown(t *testing.T, st *store.Store, version int64) *goose.Provider {
	t.Helper()
	migrations, err := fs.Sub(consensus.Migrations, "db/migrations")
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDBFromPool(store.Pool(st))
	t.Cleanup(func() { db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(context.Background(), version); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNothingOfOursWritesRiversTables: after migrating, no function or
// trigger of ours names River's job table or its notification channel;
// every job goes in through River's client. Before migration 00023 the
// webhook trigger did, which the query finds.
func TestNothingOfOursWritesRiversTables(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	pool := store.Pool(st)
	list := func() []string {
		t.Helper()
		rows, err := pool.Query(ctx, ours)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("functions and triggers of ours naming River's tables: %v", got)
	}
	p := migrateDown(t, st, 22)
	if got, want := list(), []string{"agreements_webhooks", "webhooks_enqueue"}; !slices.Equal(got, want) {
		t.Fatalf("before 00023 the query finds %v, want %v", got, want)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("after 00023 again: %v", got)
	}
}

// TestWebhookDeliveriesAreQueuedByTheirChange: the code that moves an
// agreement's chain head, outcome or revision writes one delivery per
// kind and live endpoint, each with its River job, in its transaction.
func TestWebhookDeliveriesAreQueuedByTheirChange(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	pool := store.Pool(st)
	id, pid := agreement(t, st)
	hash := claim(t, st, pid)
	if err := st.WebhookUpsert(ctx, pid, "https://hooks.example/a", time.Now()); err != nil {
		t.Fatal(err)
	}
	check := func(what string, want []string) {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT d.type FROM webhook_deliveries d
			WHERE d.agreement_id = $1
			  AND (SELECT count(*) FROM river_job j WHERE j.kind = 'webhook_delivery' AND j.args->>'delivery_id' = d.id::text
			       AND (j.args->>'participant_id')::uuid = d.participant_id) = 1
			ORDER BY d.created_at, d.type`, id)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var got []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			got = append(got, s)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: deliveries with one job each %v, want %v", what, got, want)
		}
	}
	if err := appendOne(ctx, st, store.AppendRequest{TokenHash: hash, AgreementID: id, IdempotencyKey: "k1", SkipRoster: true}, nextComment("k1")); err != nil {
		t.Fatal(err)
	}
	check("an event", []string{"room.event"})
	if _, err := st.AgreementExpireDue(ctx, time.Now().Add(48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	check("an expiry", []string{"room.event", "room.outcome"})
}

// TestEnrollmentEmailsMoveToTheOutbox: migration 00023 makes each emailed
// enrollment link's email the outbox message with the link's id, its state
// and attempts kept; a link voided before its email went out is failed.
func TestEnrollmentEmailsMoveToTheOutbox(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	pool := store.Pool(st)
	p := migrateDown(t, st, 22)
	ws, op := uuid.New(), uuid.New()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO workspaces (id, name) VALUES ($1, 'moved')`, ws)
	exec(`INSERT INTO operators (id, workspace_id, email, role, created_at) VALUES ($1, $2, 'o@moved.example', 'owner', now())`, op, ws)
	queued, sent, voided, printed := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	for i, r := range []struct {
		id       uuid.UUID
		state    *string
		body     []byte
		attempts int
	}{{printed, nil, nil, 0}, {sent, ptr("sent"), nil, 1}, {voided, ptr("queued"), nil, 0}, {queued, ptr("retrying"), []byte{1}, 2}} {
		recipient := ptr("o@moved.example")
		if r.state == nil {
			recipient = nil
		}
		exec(`INSERT INTO operator_enrollments (id, workspace_id, operator_id, token_hash, created_at, expires_at, recipient, subject, message_id, sealed_body, state, attempts)
			VALUES ($1, $2, $3, $4, now(), now() + interval '1 day', $5, 's', $6, $7, $8, $9)`,
			r.id, ws, op, bytes.Repeat([]byte{byte(i)}, 32), recipient, r.id.String()+"@moved", r.body, r.state, r.attempts)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[uuid.UUID]string{}
	rows, err := pool.Query(ctx, `SELECT id, state || '/' || attempts || '/' || (sealed_body IS NOT NULL) FROM outbox
		WHERE kind = 'enrollment' AND workspace_id = $1 AND invitation_id IS NULL AND agreement_id IS NULL`, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var s string
		if err := rows.Scan(&id, &s); err != nil {
			t.Fatal(err)
		}
		got[id] = s
	}
	want := map[uuid.UUID]string{queued: "retrying/2/true", sent: "sent/1/false", voided: "failed/0/false"}
	if !maps.Equal(got, want) {
		t.Fatalf("enrollment emails in the outbox %v, want %v", got, want)
	}
	es, err := st.EnrollmentLatest(ctx, ws)
	if err != nil || len(es) != 1 || es[0].ID != queued || es[0].State != "retrying" {
		t.Fatalf("latest enrollment %+v, %v: want the last one, retrying", es, err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestEnrollmentEmailOfThePreviousReleaseIsAdopted: during a rolling
// upgrade a replica of the previous release still writes a new link's
// email into the enrollment's own columns (which 00023 keeps) and queues
// the old job kind; OutboxAdoptEnrollment makes it the outbox message with
// the link's id, once.
func TestEnrollmentEmailOfThePreviousReleaseIsAdopted(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	pool := store.Pool(st)
	ws, op, id := uuid.New(), uuid.New(), uuid.New()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO workspaces (id, name) VALUES ($1, 'adopted')`, []any{ws}},
		{`INSERT INTO operators (id, workspace_id, email, role, created_at) VALUES ($1, $2, 'o@adopted.example', 'owner', now())`, []any{op, ws}},
		{`INSERT INTO operator_enrollments (id, workspace_id, operator_id, token_hash, created_at, expires_at, recipient, subject, message_id, sealed_body, state, attempts)
			VALUES ($1, $2, $3, decode(repeat('ab', 32), 'hex'), now(), now() + interval '1 day', 'o@adopted.example', 's', $4, '\x01', 'queued', 0)`, []any{id, ws, op, id.String() + "@adopted"}},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := st.OutboxAdoptEnrollment(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	var state string
	if err := pool.QueryRow(ctx, `SELECT count(*), min(state) FROM outbox WHERE id = $1 AND kind = 'enrollment' AND sealed_body IS NOT NULL`, id).Scan(&n, &state); err != nil || n != 1 || state != "queued" {
		t.Fatalf("outbox rows for the adopted enrollment: %d %q %v, want one queued", n, state, err)
	}
}
