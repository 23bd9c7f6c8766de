package batch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/batch"
	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// Many concurrent appends over a few agreements: batches form, and every
// agreement's chain is whole (each append read the head the previous one
// committed), with no event lost or doubled.
func TestConcurrentAppendsShareTransactions(t *testing.T) {
	t.Parallel()
	st, b := open(t)
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
				err := post(ctx, b, store.AppendRequest{TokenHash: w.hash, AgreementID: w.id, IdempotencyKey: key, SkipRoster: true}, nextComment(key))
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
	if n := batch.LargestBatch(b); n < 2 {
		t.Errorf("%d concurrent appends never shared a transaction (largest batch %d)", len(ws), n)
	}
}

// An append whose caller's deadline passes while it waits for its
// agreement's lock answers at the deadline and stores nothing.
func TestAppendAnswersAtTheCallersDeadline(t *testing.T) {
	t.Parallel()
	st, b := open(t)
	ctx := context.Background()
	id, pid := agreement(t, st)
	hash := claim(t, st, pid)
	release := make(chan struct{})
	held := holdLock(t, st, id, release)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := post(short, b, store.AppendRequest{TokenHash: hash, AgreementID: id, IdempotencyKey: "k", SkipRoster: true}, nextComment("k"))
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
	err = post(ctx, b, store.AppendRequest{TokenHash: hash, AgreementID: id, IdempotencyKey: "probe", SkipRoster: true},
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

// An append left out of its batch for a held lock runs alone, waits for
// the lock and commits.
func TestAppendLeftOutRunsAlone(t *testing.T) {
	t.Parallel()
	st, b := open(t)
	ctx := context.Background()
	id, pid := agreement(t, st)
	hash := claim(t, st, pid)
	release := make(chan struct{})
	held := holdLock(t, st, id, release)
	done := make(chan error, 1)
	go func() {
		done <- post(ctx, b, store.AppendRequest{TokenHash: hash, AgreementID: id, IdempotencyKey: "k", SkipRoster: true}, nextComment("k"))
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

// Closing the batcher, then the store, while appends are queued or running:
// every caller gets an answer (stored, or an error once the pool is
// closed); none waits for ever on a worker that stopped.
func TestCloseAnswersEveryAppend(t *testing.T) {
	t.Parallel()
	st, b := open(t)
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
			_ = post(ctx, b, store.AppendRequest{TokenHash: r.hash, AgreementID: r.id, IdempotencyKey: key, SkipRoster: true}, nextComment(key))
		}()
	}
	time.Sleep(20 * time.Millisecond)
	b.Close()
	st.Close()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("appends still waiting 15 s after the store closed")
	}
}

// Many concurrent appends into one agreement share transactions: each is
// judged after the previous one of the batch and reads what it wrote, so
// the chain is whole, every seq follows the last, and an idempotency key
// sent twice (by two writers at once) stores one event.
func TestAppendsToOneAgreementShareACommit(t *testing.T) {
	t.Parallel()
	st, b := open(t)
	ctx := context.Background()
	id, pid := agreement(t, st)
	hash := claim(t, st, pid)
	const writers, each = 16, 12
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers*each)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range each {
				// Writers 2k and 2k+1 send the same keys: a replay, perhaps in the same batch.
				key := fmt.Sprintf("w%d-%d", i/2, n)
				if err := post(ctx, b, store.AppendRequest{TokenHash: hash, AgreementID: id, IdempotencyKey: key, SkipRoster: true}, nextComment(key)); err != nil {
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
	events, err := st.EventListByAgreement(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if want := writers / 2 * each; len(events) != want {
		t.Fatalf("%d events, want %d (one per key)", len(events), want)
	}
	prev := canon.ZeroHash
	keys := map[string]bool{}
	for i, e := range events {
		if e.Seq != int64(i+1) || e.PrevHash != prev {
			t.Fatalf("event %d has seq %d and prev %s, want %d after %s", i, e.Seq, e.PrevHash, i+1, prev)
		}
		if keys[e.IdempotencyKey] {
			t.Fatalf("key %s stored twice", e.IdempotencyKey)
		}
		keys[e.IdempotencyKey] = true
		prev = e.Hash
	}
	if n := batch.LargestBatch(b); n < 2 {
		t.Errorf("%d concurrent appends into one agreement never shared a transaction (largest batch %d)", writers, n)
	}
}
