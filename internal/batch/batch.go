// Package batch gathers the database work of concurrent requests above the
// store: appends to different agreements run in shared transactions
// (store.AppendMany) and token lookups in shared statements
// (store.TokenOwners). A request waits for its share and gets exactly the
// result it would have had alone; under load the database is woken, and a
// round trip and a commit are paid, once for many requests instead of once
// each.
package batch

import (
	"context"
	"fmt"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// Batcher runs the appends and token lookups of one replica on its store.
type Batcher struct {
	st   *store.Store
	apx  *appender
	look *lookups
}

// New starts the workers of st's batches; Close stops them, before st is
// closed.
func New(st *store.Store) *Batcher {
	return &Batcher{st: st, apx: newAppender(st), look: newLookups(st)}
}

// Close lets the appends and lookups already queued finish and stops the
// workers; later calls run alone, on the store.
func (b *Batcher) Close() {
	b.apx.stop()
	b.look.stop()
}

// TokenOwner finds the owner of a participant token by the token's hash,
// or room.ErrNotFound, as store.ParticipantGetByTokenHash does: it reads
// the database on every call, in a statement sent after the call began.
func (b *Batcher) TokenOwner(ctx context.Context, tokenHash []byte) (store.TokenOwner, error) {
	return b.look.get(ctx, tokenHash)
}

// abandoned is the error of a call whose caller's context ended before its
// batch answered: the database did not answer in time, as a statement cut
// short by the same context would report (room.ErrUnavailable).
func abandoned(op string, ctx context.Context) error {
	return fmt.Errorf("batch: %s: %w: %w", op, room.ErrUnavailable, ctx.Err())
}
