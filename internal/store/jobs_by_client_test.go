package store_test

import (
	"context"
	"io/fs"
	"slices"
	"testing"
	"time"

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
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("functions and triggers of ours naming River's tables: %v", got)
	}

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
	if _, err := p.DownTo(ctx, 22); err != nil {
		t.Fatal(err)
	}
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
