package store_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// TestAppendReadsAStoredSignature: an append that names a signature reads,
// under the agreement's lock, the event on which the token's owner already
// stored it (a signature speaks for one event), and nothing for a new one,
// another participant's, or a request that names none.
func TestAppendReadsAStoredSignature(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	id, pid := agreement(t, st)
	tokenHash := claim(t, st, pid)
	sig := bytes.Repeat([]byte{7}, 64)
	now := time.Now().UTC().Truncate(time.Microsecond)
	first := store.Event{ID: uuid.New(), AgreementID: id, Seq: 1, ParticipantID: pid, Revision: 1, Action: room.ActionComment, Body: "hi",
		IdempotencyKey: "k1", CommandDigest: "sha256:c1", CreatedAt: now, PrevHash: canon.ZeroHash, Hash: "h1", Signature: sig}
	appendEvent(t, st, tokenHash, first, store.AppendWrite{})

	read := func(token, signature []byte) *store.AppendState {
		t.Helper()
		var got *store.AppendState
		err := appendOne(context.Background(), st, store.AppendRequest{TokenHash: token, IdempotencyKey: "k2", SkipRoster: true, Signature: signature},
			func(s *store.AppendState) (store.AppendWrite, error) {
				got = s
				return store.AppendWrite{}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if s := read(tokenHash, sig); s.SignatureEvent == nil || *s.SignatureEvent != first.ID {
		t.Fatalf("the stored signature was not found: %v", s.SignatureEvent)
	}
	if s := read(tokenHash, bytes.Repeat([]byte{8}, 64)); s.SignatureEvent != nil {
		t.Fatalf("a new signature found event %v", s.SignatureEvent)
	}
	if s := read(tokenHash, nil); s.SignatureEvent != nil {
		t.Fatalf("a request without a signature found event %v", s.SignatureEvent)
	}
	_, other := agreement(t, st)
	if s := read(claim(t, st, other), sig); s.SignatureEvent != nil {
		t.Fatalf("another participant's request found event %v", s.SignatureEvent)
	}
}
