package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// nextComment is decide for a comment on the head st read: what the venue
// does, minus the rules.
func nextComment(key string) func(st *store.AppendState) (store.AppendWrite, error) {
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

// A batch judges each append alone: one refused, one writing nothing and
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
	decides := []func(*store.AppendState) (store.AppendWrite, error){
		nextComment("k"),
		func(*store.AppendState) (store.AppendWrite, error) { return store.AppendWrite{}, refused },
		func(*store.AppendState) (store.AppendWrite, error) { return store.AppendWrite{}, nil },
		func(*store.AppendState) (store.AppendWrite, error) { panic("bad decide") },
		nextComment("k"),
	}
	errs, _, err := store.AppendTogether(st, reqs, decides)
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

// A statement that fails ends the whole batch before its commit: nothing
// of it is stored (the appender then runs each append again alone).
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
	_, _, err := store.AppendTogether(st, reqs, []func(*store.AppendState) (store.AppendWrite, error){nextComment("k"), broken})
	if err == nil {
		t.Fatal("a batch with a failing statement committed")
	}
	for _, id := range []uuid.UUID{idA, idB} {
		if a, err := st.AgreementGet(ctx, id); err != nil || a.Head.Seq != 0 {
			t.Fatalf("agreement %v after a failed batch: head %d, %v", id, a.Head.Seq, err)
		}
	}
}

// Many concurrent appends over a few agreements: batches form, and every
// agreement's chain is whole (each append read the head the previous one
// committed), with no event lost or doubled.
func TestConcurrentAppendsShareTransactions(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	const rooms, writers, each = 6, 4, 15
	type writer struct {
		id   uuid.UUID
		hash []byte
	}
	var ws []writer
	var ids []uuid.UUID
	for range rooms {
		id, pid := agreement(t, st)
		ids = append(ids, id)
		hash := claim(t, st, pid)
		for range writers {
			ws = append(ws, writer{id, hash})
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(ws)*each)
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range each {
				key := fmt.Sprintf("w%d-%d", i, n)
				err := st.Append(ctx, store.AppendRequest{TokenHash: w.hash, AgreementID: w.id, IdempotencyKey: key, SkipRoster: true}, nextComment(key))
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, id := range ids {
		events, err := st.EventListByAgreement(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != writers*each {
			t.Fatalf("agreement %v: %d events, want %d", id, len(events), writers*each)
		}
		prev := canon.ZeroHash
		for i, e := range events {
			if e.Seq != int64(i+1) || e.PrevHash != prev {
				t.Fatalf("agreement %v: event %d has seq %d and prev %s, want %d after %s", id, i, e.Seq, e.PrevHash, i+1, prev)
			}
			prev = e.Hash
		}
	}
	if n := store.LargestBatch(st); n < 2 {
		t.Errorf("%d concurrent appends never shared a transaction (largest batch %d)", len(ws), n)
	}
}

// An append whose caller's deadline passes while it waits for its
// agreement's lock answers at the deadline and stores nothing.
func TestAppendAnswersAtTheCallersDeadline(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	id, pid := agreement(t, st)
	hash := claim(t, st, pid)
	release := make(chan struct{})
	held := holdLock(t, st, id, release)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := st.Append(short, store.AppendRequest{TokenHash: hash, AgreementID: id, IdempotencyKey: "k", SkipRoster: true}, nextComment("k"))
	took := time.Since(start)
	if !errors.Is(err, room.ErrUnavailable) {
		t.Errorf("append past its deadline: %v, want room.ErrUnavailable", err)
	}
	if took > 1500*time.Millisecond {
		t.Errorf("append answered after %v; its deadline was 300ms", took)
	}
	time.Sleep(500 * time.Millisecond) // the lock is still held: the batch waits
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	// Nothing of it was stored once the lock was free.
	err = st.Append(ctx, store.AppendRequest{TokenHash: hash, AgreementID: id, IdempotencyKey: "probe", SkipRoster: true},
		func(s *store.AppendState) (store.AppendWrite, error) {
			if s.Agreement.Head.Seq != 0 {
				return store.AppendWrite{}, fmt.Errorf("head %d: the abandoned append was stored", s.Agreement.Head.Seq)
			}
			return store.AppendWrite{}, nil
		})
	if err != nil {
		t.Fatal(err)
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

// A batch does not wait for a lock another transaction holds: that append
// is left out (to run alone) and the others commit at once.
func TestAppendBatchLeavesALockedAgreementOut(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	idA, idB, reqs := twoAppends(t, st)
	release := make(chan struct{})
	held := holdLock(t, st, idA, release)
	start := time.Now()
	errs, alone, err := store.AppendTogether(st, reqs, []func(*store.AppendState) (store.AppendWrite, error){nextComment("k"), nextComment("k")})
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

// An append left out of its batch for a held lock runs alone, waits for
// the lock and commits.
func TestAppendLeftOutRunsAlone(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	id, pid := agreement(t, st)
	hash := claim(t, st, pid)
	release := make(chan struct{})
	held := holdLock(t, st, id, release)
	done := make(chan error, 1)
	go func() {
		done <- st.Append(ctx, store.AppendRequest{TokenHash: hash, AgreementID: id, IdempotencyKey: "k", SkipRoster: true}, nextComment("k"))
	}()
	select {
	case err := <-done:
		t.Fatalf("the append finished while the lock was held: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if a, err := st.AgreementGet(ctx, id); err != nil || a.Head.Seq != 1 {
		t.Fatalf("head %d after the lock was released (%v)", a.Head.Seq, err)
	}
}

// Closing the store while appends are queued or running: every caller gets
// an answer (stored, or an error once the pool is closed); none waits for
// ever on a worker that stopped.
func TestCloseAnswersEveryAppend(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	type room struct {
		id   uuid.UUID
		hash []byte
	}
	var rooms []room
	for range 4 {
		id, pid := agreement(t, st)
		rooms = append(rooms, room{id, claim(t, st, pid)})
	}
	var wg sync.WaitGroup
	for i := range 40 {
		r := rooms[i%len(rooms)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("c%d", i)
			_ = st.Append(ctx, store.AppendRequest{TokenHash: r.hash, AgreementID: r.id, IdempotencyKey: key, SkipRoster: true}, nextComment(key))
		}()
	}
	time.Sleep(20 * time.Millisecond)
	st.Close()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("appends still waiting 15 s after the store closed")
	}
}
