package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/store"
)

// The webhook trigger runs only in agreements where an endpoint was ever
// registered (migration 00009): registering marks the agreement, whether
// through WebhookUpsert or a bare INSERT (a replica running the code before
// the migration); an agreement without one queues nothing; one whose
// endpoints were removed stays marked and still queues nothing.
func TestWebhookTriggerRunsWhereEndpointsWereRegistered(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	pool := store.Pool(st)
	type room struct {
		id, pid uuid.UUID
		hash    []byte
		n       int
	}
	newRoom := func() *room {
		id, pid := agreement(t, st)
		return &room{id: id, pid: pid, hash: claim(t, st, pid)}
	}
	post := func(r *room) {
		t.Helper()
		r.n++
		key := fmt.Sprintf("key-%d", r.n)
		if err := appendOne(ctx, st, store.AppendRequest{TokenHash: r.hash, AgreementID: r.id, IdempotencyKey: key, SkipRoster: true}, nextComment(key)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, r *room, marked bool, deliveries int) {
		t.Helper()
		var m bool
		var n int
		err := pool.QueryRow(ctx, `SELECT a.webhooks_registered, (SELECT count(*) FROM webhook_deliveries d WHERE d.agreement_id = a.id)
			FROM agreements a WHERE a.id = $1`, r.id).Scan(&m, &n)
		if err != nil || m != marked || n != deliveries {
			t.Fatalf("%s: marked %v with %d deliveries (%v); want marked %v with %d", what, m, n, err, marked, deliveries)
		}
	}

	none := newRoom()
	post(none)
	check("no endpoint", none, false, 0)

	upserted := newRoom()
	if err := st.WebhookUpsert(ctx, upserted.pid, "https://hooks.example/a", time.Now()); err != nil {
		t.Fatal(err)
	}
	check("registered", upserted, true, 0)
	post(upserted)
	check("registered, one event", upserted, true, 1)

	inserted := newRoom()
	if _, err := pool.Exec(ctx, `INSERT INTO webhooks (participant_id, agreement_id, url, created_at, workspace_id)
		VALUES ($1, $2, 'https://hooks.example/b', now(), (SELECT workspace_id FROM agreements WHERE id = $2))`,
		inserted.pid, inserted.id); err != nil {
		t.Fatal(err)
	}
	post(inserted)
	check("inserted by an older replica, one event", inserted, true, 1)

	if err := st.WebhookDelete(ctx, upserted.pid, time.Now()); err != nil {
		t.Fatal(err)
	}
	post(upserted)
	check("endpoint removed, another event", upserted, true, 1)
}
