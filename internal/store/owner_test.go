package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/store"
)

var errNoOwnerLeft = errors.New("no owner left")

// demoteOrRemove runs, as the venue does, one owner's change to another
// operator in a workspace transaction: the update, then the owner count,
// refused when it is zero. Between the two, it waits (once, at most a
// second) at arrived until every change of its trial has made its update,
// so the counts happen while every update is still uncommitted.
func demoteOrRemove(ctx context.Context, st *store.Store, ws, target uuid.UUID, remove bool, arrived *sync.WaitGroup, once *sync.Once) error {
	return st.InWorkspace(ctx, ws, func(tx *store.Tx) error {
		var err error
		if remove {
			_, err = tx.OperatorRemove(ctx, ws, target, time.Now())
		} else {
			_, err = tx.OperatorSetRole(ctx, ws, target, "viewer")
		}
		if err != nil {
			return err
		}
		if arrived != nil {
			once.Do(arrived.Done)
			done := make(chan struct{})
			go func() { arrived.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(time.Second):
			}
		}
		n, err := tx.OperatorOwnerCount(ctx, ws)
		if err != nil {
			return err
		}
		if n == 0 {
			return errNoOwnerLeft
		}
		return nil
	})
}

// TestLastOwnerHoldsUnderConcurrentChanges: two owners who each demote or
// remove the other at the same instant never both succeed; the workspace
// keeps an owner in every trial, whichever change commits first, whether
// the two counts meet while both updates are uncommitted or run freely.
func TestLastOwnerHoldsUnderConcurrentChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for trial := 0; trial < 40; trial++ {
		removeA, removeB := trial%2 == 1, trial%4 >= 2
		met := trial < 20 // the first half meets between update and count
		ws := newWorkspace(t, st, fmt.Sprintf("owners-%d", trial))
		a, b := uuid.New(), uuid.New()
		err := st.InWorkspace(ctx, ws, func(tx *store.Tx) error {
			for i, id := range []uuid.UUID{a, b} {
				if err := tx.OperatorInsert(ctx, store.Operator{ID: id, WorkspaceID: ws, Email: fmt.Sprintf("o%d@example.test", i), Role: "owner", CreatedAt: time.Now()}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var arrived *sync.WaitGroup
		if met {
			arrived = &sync.WaitGroup{}
			arrived.Add(2)
		}
		var onceA, onceB sync.Once
		errs := make([]error, 2)
		var wg sync.WaitGroup
		wg.Add(2)
		// a changes b and b changes a, started in either order.
		go func() { defer wg.Done(); errs[0] = demoteOrRemove(ctx, st, ws, b, removeA, arrived, &onceA) }()
		go func() { defer wg.Done(); errs[1] = demoteOrRemove(ctx, st, ws, a, removeB, arrived, &onceB) }()
		wg.Wait()
		var owners int64
		if err := st.InWorkspace(ctx, ws, func(tx *store.Tx) error { owners, err = tx.OperatorOwnerCount(ctx, ws); return err }); err != nil {
			t.Fatal(err)
		}
		if owners != 1 {
			t.Fatalf("trial %d (remove %v/%v, met %v): %d owners left, changes answered %v and %v", trial, removeA, removeB, met, owners, errs[0], errs[1])
		}
		for _, err := range errs {
			if err != nil && !errors.Is(err, errNoOwnerLeft) {
				t.Fatalf("trial %d: %v", trial, err)
			}
		}
	}
}
