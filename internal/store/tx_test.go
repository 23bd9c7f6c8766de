package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/workspace"
)

// TestSavepointUndoesItsWrites: what a savepoint that fails wrote is
// neither committed nor announced, while the transaction goes on and
// commits, and announces, what a savepoint that succeeds wrote.
func TestSavepointUndoesItsWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := pgtest.Store(t)
	id, _ := pgtest.Agreement(t, st)
	var mu sync.Mutex
	var heard []uuid.UUID
	st.OnRoomCommitted(func(a uuid.UUID) { mu.Lock(); heard = append(heard, a); mu.Unlock() })
	before, err := st.AgreementGet(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	undo := errors.New("undo")
	err = st.InWorkspace(ctx, workspace.DefaultID, func(tx *store.Tx) error {
		if err := tx.Savepoint(ctx, func(tx *store.Tx) error {
			if err := tx.AgreementBump(ctx, id); err != nil {
				return err
			}
			return undo
		}); !errors.Is(err, undo) {
			t.Errorf("a failed savepoint returned %v, want its error", err)
		}
		return tx.Savepoint(ctx, func(tx *store.Tx) error { return tx.AgreementBump(ctx, id) })
	})
	if err != nil {
		t.Fatal(err)
	}
	after, err := st.AgreementGet(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if after.Version != before.Version+1 {
		t.Errorf("version %d after one kept and one undone bump of %d", after.Version, before.Version)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 1 || heard[0] != id {
		t.Errorf("announced %v, want the agreement once", heard)
	}
}
