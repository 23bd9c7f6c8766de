package roomnotify_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/store"
)

// agreement is pgtest.Agreement, short for the many tests here.
func agreement(t *testing.T, st *store.Store) (uuid.UUID, uuid.UUID) {
	t.Helper()
	return pgtest.Agreement(t, st)
}
