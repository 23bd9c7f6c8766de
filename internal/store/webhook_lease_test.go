package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// A leased delivery is nobody else's until its lease runs out (a worker
// that died mid-call): then it is due again, its attempt not counted, and
// a release makes it due at once.
func TestWebhookDeliveryLease(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	id, pid := agreement(t, st)
	hash := claim(t, st, pid)
	if err := st.WebhookUpsert(ctx, pid, "https://hooks.example/h", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := appendOne(ctx, st, store.AppendRequest{TokenHash: hash, AgreementID: id, IdempotencyKey: "k", SkipRoster: true}, nextComment("k")); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Add(time.Second)
	d, err := st.WebhookDeliveryLease(ctx, now, now.Add(30*time.Second))
	if err != nil || d.URL != "https://hooks.example/h" || d.Attempts != 0 {
		t.Fatalf("lease: %+v %v", d, err)
	}
	if _, err := st.WebhookDeliveryLease(ctx, now.Add(29*time.Second), now.Add(time.Minute)); !errors.Is(err, room.ErrNotFound) {
		t.Fatalf("a leased delivery was leased again: %v", err)
	}
	again, err := st.WebhookDeliveryLease(ctx, now.Add(31*time.Second), now.Add(time.Minute))
	if err != nil || again.ID != d.ID || again.Attempts != 0 {
		t.Fatalf("after the lease ran out: %+v %v", again, err)
	}
	if err := st.WebhookDeliveryRelease(ctx, d.ID, now.Add(31*time.Second)); err != nil {
		t.Fatal(err)
	}
	if back, err := st.WebhookDeliveryLease(ctx, now.Add(31*time.Second), now.Add(time.Minute)); err != nil || back.ID != d.ID {
		t.Fatalf("after a release: %+v %v", back, err)
	}
}
