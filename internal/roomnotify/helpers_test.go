package roomnotify_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/store"
)

// agreement stores an agreement and returns its id (and no participant).
func agreement(t *testing.T, st *store.Store) (uuid.UUID, uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	id := uuid.New()
	now := time.Now().UTC().Truncate(time.Microsecond)
	if err := st.InTx(ctx, func(tx *store.Tx) error { return tx.AgreementInsert(ctx, id, now.Add(time.Hour), now) }); err != nil {
		t.Fatal(err)
	}
	return id, uuid.Nil
}
