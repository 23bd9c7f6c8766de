package batch_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/consensus-md/consensus/internal/batch"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// blockLookups holds a lock that stops every token lookup's statement
// until the returned function is called.
func blockLookups(t *testing.T, url string) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE participants IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { _ = tx.Rollback(ctx) }) }
	t.Cleanup(release)
	return release
}

// waitLookups waits until count(st) reaches n; what names it in the failure.
func waitLookups(t *testing.T, b *batch.Batcher, what string, count func(*batch.Batcher) int, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); count(b) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, want %d", what, count(b), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Lookups that arrive while a statement runs go together in the next one,
// each answered with its own token's owner, at most 64 per statement.
func TestLookupsQueuedTogetherAnswerEachItsOwn(t *testing.T) {
	t.Parallel()
	url, st, b := openURL(t)
	ctx := context.Background()
	type tok struct {
		hash  []byte
		agr   uuid.UUID
		pid   uuid.UUID
		known bool
	}
	var toks []tok
	for range 5 {
		id, pid := agreement(t, st)
		toks = append(toks, tok{hash: claim(t, st, pid), agr: id, pid: pid, known: true})
	}
	revoked := toks[4]
	if _, err := st.ParticipantRevoke(ctx, revoked.pid, time.Now()); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		u := uuid.New()
		toks = append(toks, tok{hash: u[:]})
	}

	release := blockLookups(t, url)
	// The first lookups take the workers and wait on the lock; the others
	// queue behind them: 100 lookups, the same token several times over.
	first := make(chan error, batch.LookupWorkers)
	for i := range batch.LookupWorkers {
		go func() { _, err := b.TokenOwner(ctx, toks[0].hash); first <- err }()
		waitLookups(t, b, "lookups the workers took", batch.TakenLookups, i+1)
	}
	const n = 100
	type answer struct {
		o   store.TokenOwner
		err error
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			o, err := b.TokenOwner(ctx, toks[i%len(toks)].hash)
			answers[i] = answer{o, err}
		})
	}
	waitLookups(t, b, "lookups queued", batch.QueuedLookups, n)
	release()
	wg.Wait()
	for range batch.LookupWorkers {
		if err := <-first; err != nil {
			t.Fatal(err)
		}
	}
	for i, a := range answers {
		k := toks[i%len(toks)]
		if !k.known {
			if !errors.Is(a.err, room.ErrNotFound) {
				t.Fatalf("lookup %d of an unknown token: %+v, %v", i, a.o, a.err)
			}
			continue
		}
		if a.err != nil || a.o.ParticipantID != k.pid || a.o.AgreementID != k.agr || !bytes.Equal(a.o.TokenHash, k.hash) || a.o.Version == 0 ||
			(a.o.RevokedAt != nil) != (k.pid == revoked.pid) {
			t.Fatalf("lookup %d: %+v, %v; want participant %s of %s", i, a.o, a.err, k.pid, k.agr)
		}
	}
	if got := batch.LargestLookup(b); got != 64 {
		t.Fatalf("the largest statement carried %d lookups, want 64 (100 queued, 64 at most)", got)
	}
}

// A caller whose deadline passes while its lookup waits answers at once,
// with the database-unavailable error a statement cut short gives; the
// lookups behind it are still answered.
func TestLookupAnswersAtItsCallersDeadline(t *testing.T) {
	t.Parallel()
	url, st, b := openURL(t)
	_, pid := agreement(t, st)
	hash := claim(t, st, pid)
	release := blockLookups(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := b.TokenOwner(ctx, hash)
	if !errors.Is(err, room.ErrUnavailable) || time.Since(start) > 5*time.Second {
		t.Fatalf("lookup past its deadline: %v after %v, want room.ErrUnavailable at the deadline", err, time.Since(start))
	}
	done := make(chan error, 1)
	go func() { _, err := b.TokenOwner(context.Background(), hash); done <- err }()
	release()
	if err := <-done; err != nil {
		t.Fatalf("the next lookup: %v", err)
	}
}

// Closing the batcher answers the lookups queued; later ones run alone,
// and fail once the store has closed, instead of waiting forever.
func TestLookupsAnsweredAcrossClose(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	b := batch.New(st)
	_, pid := agreement(t, st)
	hash := claim(t, st, pid)
	release := blockLookups(t, url)
	errs := make(chan error, 10)
	for range 10 {
		go func() { _, err := b.TokenOwner(context.Background(), hash); errs <- err }()
	}
	waitLookups(t, b, "lookups taken or queued", func(b *batch.Batcher) int { return batch.TakenLookups(b) + batch.QueuedLookups(b) }, 10)
	closed := make(chan struct{})
	go func() { b.Close(); close(closed) }()
	time.Sleep(50 * time.Millisecond)
	release()
	for range 10 {
		if err := <-errs; err != nil {
			t.Fatalf("a lookup queued before Close: %v", err)
		}
	}
	<-closed
	if _, err := b.TokenOwner(context.Background(), hash); err != nil {
		t.Fatalf("a lookup after the batcher closed, alone: %v", err)
	}
	st.Close()
	if _, err := b.TokenOwner(context.Background(), hash); err == nil {
		t.Fatal("a lookup after the store closed succeeded")
	}
}
