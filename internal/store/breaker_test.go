package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/proctest"
	"github.com/consensus-md/consensus/internal/store"
)

// TestBreakerBusyDatabaseRefusesNothing: a statement that waits out its
// time behind a lock is a busy database, not a silent one: the probe Suspect
// starts gets its answer, and nothing is refused. On a machine so loaded
// that a fresh connection takes longer than the probe's half second (the
// full test suite under -race), one probe may miss; the next, half a
// second later, gets its answer, so the breaker is closed within 2 s
// whatever the load.
func TestBreakerBusyDatabaseRefusesNothing(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	id, _ := agreement(t, st)
	hold := make(chan struct{})
	held := make(chan struct{})
	go func() {
		_ = st.InTx(ctx, func(tx *store.Tx) error {
			if _, err := tx.AgreementLock(ctx, id); err != nil {
				return err
			}
			close(held)
			<-hold
			return nil
		})
	}()
	<-held
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := st.InTx(rctx, func(tx *store.Tx) error { _, err := tx.AgreementLock(rctx, id); return err })
	cancel()
	close(hold)
	if err == nil {
		t.Fatalf("the second lock did not wait: %v", err)
	}
	st.Suspect()
	deadline := time.Now().Add(2 * time.Second)
	for st.Refusing() || time.Now().Before(deadline.Add(-time.Second)) {
		if time.Now().After(deadline) {
			t.Fatal("the breaker stayed open on a database that answers")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBreakerFrozenDatabase: once something ran out of its time on a
// frozen database, the store refuses within the probe's half second, ends
// the Tripped context, and stops refusing once the database answers again.
func TestBreakerFrozenDatabase(t *testing.T) {
	t.Parallel()
	pg := proctest.StartPostgres(t)
	ctx := context.Background()
	if err := store.Migrate(ctx, pg.URL()); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, pg.URL(), store.WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	tripped := st.Tripped()
	pg.Freeze(t)
	start := time.Now()
	st.Suspect()
	select {
	case <-tripped.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the breaker did not open within 2s of a frozen database")
	}
	if d := time.Since(start); d > time.Second || !st.Refusing() {
		t.Fatalf("opened after %v, refusing %v", d, st.Refusing())
	}
	pg.Thaw(t)
	deadline := time.Now().Add(5 * time.Second)
	for st.Refusing() {
		if time.Now().After(deadline) {
			t.Fatal("still refusing 5s after the database answers again")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.Tripped().Err() != nil {
		t.Fatal("Tripped stays ended after the breaker closed")
	}
	if err := st.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}
