package roomnotify_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/roomnotify"
	"github.com/consensus-md/consensus/internal/store"
)

// TestRoomChangesReachEveryReplica: a version bump committed through one
// Store is heard at once by that Store's listener and, through PostgreSQL,
// by another Store's on the same database; a rolled-back bump by none.
func TestRoomChangesReachEveryReplica(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	open := func() (*store.Store, *roomEars) {
		st, err := store.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		r := &roomEars{signal: make(chan struct{}, 64)}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); roomnotify.Listen(ctx, st, r, log) }()
		t.Cleanup(func() { cancel(); wg.Wait() })
		deadline := time.Now().Add(10 * time.Second)
		for r.resumes() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the listener never listened")
			}
			time.Sleep(5 * time.Millisecond)
		}
		return st, r
	}
	stA, heardA := open()
	_, heardB := open()

	id, _ := agreement(t, stA)
	before := heardA.count(id)
	if err := stA.InTx(ctx, func(tx *store.Tx) error { return tx.AgreementBump(ctx, id) }); err != nil {
		t.Fatal(err)
	}
	// At once, not through PostgreSQL.
	if heardA.count(id) <= before {
		t.Fatal("the committing replica did not hear its own change when the commit returned")
	}
	deadline := time.Now().Add(5 * time.Second)
	for heardB.count(id) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the other replica never heard the change")
		}
		time.Sleep(5 * time.Millisecond)
	}

	// The committing replica hears its change once: the echo of its own
	// announcement through PostgreSQL would wake its waiters (and their
	// database reads) a second time.
	time.Sleep(200 * time.Millisecond) // any earlier notification has arrived
	heardByA, heardByB := heardA.count(id), heardB.count(id)
	if err := stA.InTx(ctx, func(tx *store.Tx) error { return tx.AgreementBump(ctx, id) }); err != nil {
		t.Fatal(err)
	}
	for heardB.count(id) == heardByB {
		if time.Now().After(deadline) {
			t.Fatal("the other replica never heard the second change")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if n := heardA.count(id) - heardByA; n != 1 {
		t.Fatalf("the committing replica heard its own change %d times", n)
	}

	other := uuid.New()
	_ = stA.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.AgreementBump(ctx, other); err != nil {
			return err
		}
		return context.Canceled // rolled back
	})
	time.Sleep(200 * time.Millisecond)
	if heardA.count(other)+heardB.count(other) != 0 {
		t.Fatal("a rolled-back change was announced")
	}
}
