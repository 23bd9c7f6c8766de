package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/store/dbsqlc"
)

func TestInterpret(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	_, err := st.AgreementGet(ctx, uuid.New())
	if !errors.Is(store.Interpret(err), room.ErrNotFound) {
		t.Fatalf("no rows: %v", store.Interpret(err))
	}
	id := uuid.New()
	p := dbsqlc.AgreementInsertParams{ID: id, Deadline: time.Now().Add(time.Hour), CreatedAt: time.Now()}
	if err := st.AgreementInsert(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := store.Interpret(st.AgreementInsert(ctx, p)); !errors.Is(err, room.ErrConflict) {
		t.Fatalf("duplicate key: %v", err)
	}
	if store.Interpret(nil) != nil {
		t.Fatal("nil")
	}
}

func TestInTxRollsBackAndRetries(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	id := uuid.New()
	boom := errors.New("boom")
	err := st.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.AgreementInsert(ctx, dbsqlc.AgreementInsertParams{ID: id, Deadline: time.Now().Add(time.Hour), CreatedAt: time.Now()}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("InTx returned %v", err)
	}
	if _, err := st.AgreementGet(ctx, id); !errors.Is(store.Interpret(err), room.ErrNotFound) {
		t.Fatal("the failed transaction was committed")
	}

	attempts := 0
	err = st.InTx(ctx, func(tx *store.Tx) error {
		attempts++
		if err := tx.AgreementInsert(ctx, dbsqlc.AgreementInsertParams{ID: id, Deadline: time.Now().Add(time.Hour), CreatedAt: time.Now()}); err != nil {
			return err
		}
		if attempts < 3 {
			return &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
		}
		return nil
	})
	if err != nil || attempts != 3 {
		t.Fatalf("after %d attempts: %v", attempts, err)
	}
	if _, err := st.AgreementGet(ctx, id); err != nil {
		t.Fatalf("the retried transaction did not commit: %v", err)
	}
}
