package batch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/batch"
	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// open is a store on a fresh database and its batcher, closed in that
// order when the test ends.
func open(t *testing.T) (*store.Store, *batch.Batcher) {
	t.Helper()
	st := pgtest.Store(t)
	b := batch.New(st)
	t.Cleanup(b.Close)
	return st, b
}

// post is Append for a test that needs only its error.
func post(ctx context.Context, b *batch.Batcher, req store.AppendRequest, decide store.Decide) error {
	_, err := b.Append(ctx, req, decide)
	return err
}

// agreement is pgtest.Agreement, short for the many tests here.
func agreement(t *testing.T, st *store.Store) (uuid.UUID, uuid.UUID) {
	t.Helper()
	return pgtest.Agreement(t, st)
}

// claim gives participant pid a token hash and returns it.
func claim(t *testing.T, st *store.Store, pid uuid.UUID) []byte {
	t.Helper()
	tokenHash := uuid.New()
	if ok, err := st.ParticipantClaim(context.Background(), pid, store.Claim{BindingJSON: "{}", BindingDigest: "d", TokenHash: tokenHash[:], ClaimedAt: time.Now()}); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	return tokenHash[:]
}

// nextComment is decide for a comment on the head st read: what the venue
// does, minus the rules.
func nextComment(key string) store.Decide {
	return func(st *store.AppendState) (store.AppendWrite, error) {
		if st.Holder == nil {
			return store.AppendWrite{}, errors.New("no holder")
		}
		if st.Prior != nil {
			return store.AppendWrite{}, nil
		}
		a := st.Agreement
		e := store.Event{ID: uuid.New(), AgreementID: a.ID, Seq: a.Head.Seq + 1, ParticipantID: st.Holder.ID, Revision: 1,
			Action: room.ActionComment, Body: key, IdempotencyKey: key, CommandDigest: "sha256:" + key,
			CreatedAt: time.Now().UTC().Truncate(time.Microsecond), PrevHash: a.Head.Hash, Hash: canon.Digest([]byte(a.Head.Hash + key))}
		return store.AppendWrite{Event: &e}, nil
	}
}

// holdLock takes agreement id's lock in a transaction of its own until
// release is closed; the returned channel has that transaction's error.
func holdLock(t *testing.T, st *store.Store, id uuid.UUID, release <-chan struct{}) <-chan error {
	t.Helper()
	ctx := context.Background()
	locked, held := make(chan struct{}), make(chan error, 1)
	go func() {
		held <- st.InTx(ctx, func(tx *store.Tx) error {
			if _, err := tx.AgreementLock(ctx, id); err != nil {
				return err
			}
			close(locked)
			<-release
			return nil
		})
	}()
	<-locked
	return held
}

// openURL is open with the database's URL.
func openURL(t *testing.T) (string, *store.Store, *batch.Batcher) {
	t.Helper()
	url := pgtest.URL(t)
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	b := batch.New(st)
	t.Cleanup(b.Close)
	return url, st, b
}
