package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/proctest"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// TestOutageIsUnavailableAndBounded: with the
// database stopped, and then frozen (SIGSTOP), a read, a transaction and
// a ping under a request deadline each fail with room.ErrUnavailable
// within that deadline, never room.ErrNotFound; and the same Store works
// again once the database is back, without being reopened. The cluster is
// this test's own, never the shared one.
func TestOutageIsUnavailableAndBounded(t *testing.T) {
	t.Parallel()
	pg := proctest.StartPostgres(t)
	ctx := context.Background()
	if err := store.Migrate(ctx, pg.URL()); err != nil {
		t.Fatal(err)
	}
	const bound = time.Second
	st, err := store.Open(ctx, pg.URL(), store.WithTimeout(bound))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	id, _ := agreement(t, st)

	calls := map[string]func(context.Context) error{
		"read": func(ctx context.Context) error { _, err := st.AgreementGet(ctx, id); return err },
		"missing row": func(ctx context.Context) error {
			_, err := st.AgreementGet(ctx, uuid.New())
			return err
		},
		"transaction": func(ctx context.Context) error {
			return st.InTx(ctx, func(tx *store.Tx) error { _, err := tx.AgreementLock(ctx, id); return err })
		},
	}
	probe := func(phase string) {
		t.Helper()
		for name, call := range calls {
			rctx, cancel := context.WithTimeout(ctx, bound)
			start := time.Now()
			err := call(rctx)
			took := time.Since(start)
			cancel()
			if !errors.Is(err, room.ErrUnavailable) || errors.Is(err, room.ErrNotFound) {
				t.Errorf("database %s: %s: %v, want room.ErrUnavailable", phase, name, err)
			}
			if took > bound+time.Second {
				t.Errorf("database %s: %s took %v, the bound is %v", phase, name, took, bound)
			}
		}
	}
	recovered := func(phase string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			rctx, cancel := context.WithTimeout(ctx, bound)
			_, err := st.AgreementGet(rctx, id)
			cancel()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no recovery 30s after the database was %s: %v", phase, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// With the database up, the same calls answer (the missing row as
	// room.ErrNotFound), so what the probes see is the outage.
	for name, call := range calls {
		if err := call(ctx); err != nil && (name != "missing row" || !errors.Is(err, room.ErrNotFound)) {
			t.Fatalf("database up: %s: %v", name, err)
		}
	}
	pg.Stop(t)
	probe("stopped")
	pg.Start(t)
	recovered("restarted")
	pg.Freeze(t)
	probe("frozen")
	pg.Thaw(t)
	recovered("thawed")
}
