package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/store"
)

// TestWebhookDeliveriesOfThePreviousRelease (migration 00029): a session
// without consensus.release, as every session of v0.9.0 is, that changes
// an agreement with a live endpoint gets its deliveries written by the
// compatibility trigger, not yet queued and with no River job; the sweep's
// WebhookDeliveriesAdopt queues each one's job once. A session of this
// release gets no row from the trigger: its code writes its own deliveries,
// queued, each with its job.
func TestWebhookDeliveriesOfThePreviousRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.URL(t)
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	pool := store.Pool(st)
	id, pid := agreement(t, st)
	hash := claim(t, st, pid)
	if err := st.WebhookUpsert(ctx, pid, "https://hooks.example/a", time.Now()); err != nil {
		t.Fatal(err)
	}
	// Each delivery of the agreement, oldest first: its kind, whether it
	// is queued, and how many River jobs name it.
	deliveries := func() []string {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT concat_ws(' ', d.type, CASE WHEN d.queued THEN 'queued' ELSE 'unqueued' END,
				(SELECT count(*) FROM river_job j WHERE j.kind = 'webhook_delivery' AND j.args->>'delivery_id' = d.id::text
				 AND (j.args->>'participant_id')::uuid = d.participant_id))
			FROM webhook_deliveries d WHERE d.agreement_id = $1 ORDER BY d.created_at, d.type`, id)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	check := func(what string, want ...string) {
		t.Helper()
		if got := deliveries(); !slices.Equal(got, want) {
			t.Fatalf("%s: deliveries %q, want %q", what, got, want)
		}
	}
	// What a replica's append does to the agreement's row.
	const change = `UPDATE agreements SET version = version + 1, head_seq = head_seq + 1 WHERE id = $1`

	previous, err := pgx.Connect(ctx, pgtest.ServiceURL(dbURL))
	if err != nil {
		t.Fatal(err)
	}
	defer previous.Close(ctx)
	var release *string
	if err := previous.QueryRow(ctx, `SELECT current_setting('consensus.release', true)`).Scan(&release); err != nil || release != nil {
		t.Fatalf("the previous release's session carries consensus.release %v (%v)", release, err)
	}
	if _, err := previous.Exec(ctx, change, id); err != nil {
		t.Fatal(err)
	}
	if _, err := previous.Exec(ctx, `UPDATE agreements SET version = version + 1, outcome_status = 'expired' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	check("changed by the previous release", "room.event unqueued 0", "room.outcome unqueued 0")

	for i, want := range []int{2, 0} {
		n, err := st.WebhookDeliveriesAdopt(ctx)
		if err != nil || n != want {
			t.Fatalf("adoption %d queued %d (%v), want %d", i+1, n, err, want)
		}
	}
	check("adopted", "room.event queued 1", "room.outcome queued 1")

	// This release: the same statement on its pool writes nothing, and
	// its append writes one delivery, queued with its job.
	if _, err := pool.Exec(ctx, change, id); err != nil {
		t.Fatal(err)
	}
	check("changed by this release's session", "room.event queued 1", "room.outcome queued 1")
	if _, err := pool.Exec(ctx, `UPDATE agreements SET outcome_status = 'pending', version = version + 1 WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if err := appendOne(ctx, st, store.AppendRequest{TokenHash: hash, AgreementID: id, IdempotencyKey: "k1", SkipRoster: true}, nextComment("k1")); err != nil {
		t.Fatal(err)
	}
	check("appended by this release", "room.event queued 1", "room.outcome queued 1", "room.event queued 1")
	if n, err := st.WebhookDeliveriesAdopt(ctx); err != nil || n != 0 {
		t.Fatalf("adoption after this release's append queued %d (%v), want 0", n, err)
	}
}

// TestWebhookDeliveriesOfTheMigrationGap: a change a replica of v0.9.0
// committed between migrations 00023 and 00029 queued nothing (no trigger
// then); 00029 writes its delivery, not yet queued, and leaves a change
// that has its delivery alone.
func TestWebhookDeliveriesOfTheMigrationGap(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	pool := store.Pool(st)
	id, pid := agreement(t, st)
	hash := claim(t, st, pid)
	if err := st.WebhookUpsert(ctx, pid, "https://hooks.example/a", time.Now()); err != nil {
		t.Fatal(err)
	}
	p := migrateDown(t, st, 28)
	for _, key := range []string{"k1", "k2"} {
		if err := appendOne(ctx, st, store.AppendRequest{TokenHash: hash, AgreementID: id, IdempotencyKey: key, SkipRoster: true}, nextComment(key)); err != nil {
			t.Fatal(err)
		}
	}
	// The second change as v0.9.0 made it in the gap: without a delivery.
	if _, err := pool.Exec(ctx, `DELETE FROM webhook_deliveries WHERE agreement_id = $1 AND seq = 2`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT concat_ws(' ', type, seq, queued) FROM webhook_deliveries WHERE agreement_id = $1 ORDER BY seq`, id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if want := []string{"room.event 1 t", "room.event 2 f"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("deliveries after 00029: %q (%v), want %q", got, err, want)
	}
}
