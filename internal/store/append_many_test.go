package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// appendTogether runs the appends with AppendMany: each append's own
// error, whether it was left out (Locked), and the transaction's error.
func appendTogether(st *store.Store, reqs []store.AppendRequest, decides []store.Decide) ([]error, []bool, error) {
	items := make([]*store.AppendItem, len(reqs))
	for i := range reqs {
		items[i] = &store.AppendItem{Request: reqs[i], Decide: decides[i]}
	}
	err := st.AppendMany(context.Background(), append([]*store.AppendItem(nil), items...), nil)
	errs, locked := make([]error, len(items)), make([]bool, len(items))
	for i, it := range items {
		errs[i], locked[i] = it.Err, it.Locked
	}
	return errs, locked, err
}

// appendOne is Append for a test that needs only its error.
func appendOne(ctx context.Context, st *store.Store, req store.AppendRequest, decide store.Decide) error {
	_, err := st.Append(ctx, req, decide)
	return err
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

// AppendMany judges each append alone: one refused, one writing nothing and
// one whose decide panics leave the others' events committed.
func TestAppendBatchIsolatesEachAppend(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	var reqs []store.AppendRequest
	var ids []uuid.UUID
	for range 5 {
		id, pid := agreement(t, st)
		ids = append(ids, id)
		reqs = append(reqs, store.AppendRequest{TokenHash: claim(t, st, pid), AgreementID: id, IdempotencyKey: "k", SkipRoster: true})
	}
	refused := errors.New("refused")
	decides := []store.Decide{
		nextComment("k"),
		func(*store.AppendState) (store.AppendWrite, error) { return store.AppendWrite{}, refused },
		func(*store.AppendState) (store.AppendWrite, error) { return store.AppendWrite{}, nil },
		func(*store.AppendState) (store.AppendWrite, error) { panic("bad decide") },
		nextComment("k"),
	}
	errs, _, err := appendTogether(st, reqs, decides)
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || !errors.Is(errs[1], refused) || errs[2] != nil || errs[3] == nil || errs[4] != nil {
		t.Fatalf("errors: %v", errs)
	}
	for i, want := range []int64{1, 0, 0, 0, 1} {
		a, err := st.AgreementGet(ctx, ids[i])
		if err != nil {
			t.Fatal(err)
		}
		if a.Head.Seq != want {
			t.Errorf("agreement %d: head %d, want %d", i, a.Head.Seq, want)
		}
	}
}

// twoAppends makes two agreements with a claimed participant each and
// returns them with a comment append request for each, under key "k".
func twoAppends(t *testing.T, st *store.Store) (idA, idB uuid.UUID, reqs []store.AppendRequest) {
	t.Helper()
	idA, pidA := agreement(t, st)
	idB, pidB := agreement(t, st)
	return idA, idB, []store.AppendRequest{
		{TokenHash: claim(t, st, pidA), AgreementID: idA, IdempotencyKey: "k", SkipRoster: true},
		{TokenHash: claim(t, st, pidB), AgreementID: idB, IdempotencyKey: "k", SkipRoster: true},
	}
}

// A statement that fails ends the whole transaction before its commit:
// nothing of it is stored.
func TestAppendBatchFailsWhole(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	idA, idB, reqs := twoAppends(t, st)
	broken := func(st *store.AppendState) (store.AppendWrite, error) {
		w, err := nextComment("k")(st)
		w.Event.ParticipantID = uuid.New() // no such participant: the insert fails
		return w, err
	}
	_, _, err := appendTogether(st, reqs, []store.Decide{nextComment("k"), broken})
	if err == nil {
		t.Fatal("a batch with a failing statement committed")
	}
	for _, id := range []uuid.UUID{idA, idB} {
		if a, err := st.AgreementGet(ctx, id); err != nil || a.Head.Seq != 0 {
			t.Fatalf("agreement %v after a failed batch: head %d, %v", id, a.Head.Seq, err)
		}
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

// AppendMany does not wait for a lock another transaction holds: that
// append is left out (Locked) and the others commit at once.
func TestAppendBatchLeavesALockedAgreementOut(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	idA, idB, reqs := twoAppends(t, st)
	release := make(chan struct{})
	held := holdLock(t, st, idA, release)
	start := time.Now()
	errs, alone, err := appendTogether(st, reqs, []store.Decide{nextComment("k"), nextComment("k")})
	took := time.Since(start)
	close(release)
	if e := <-held; e != nil {
		t.Fatal(e)
	}
	if err != nil || errs[1] != nil || !alone[0] || alone[1] {
		t.Fatalf("batch %v, errors %v, alone %v", err, errs, alone)
	}
	if took > 2*time.Second {
		t.Fatalf("the batch waited %v for the held lock", took)
	}
	for id, want := range map[uuid.UUID]int64{idA: 0, idB: 1} {
		if a, err := st.AgreementGet(ctx, id); err != nil || a.Head.Seq != want {
			t.Fatalf("agreement head %d, want %d (%v)", a.Head.Seq, want, err)
		}
	}
}
