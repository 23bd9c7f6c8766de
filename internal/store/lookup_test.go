package store_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// blockLookups holds a lock that stops every token lookup's statement
// until the returned function is called.
func blockLookups(t *testing.T, st *store.Store) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := store.Pool(st).Begin(ctx)
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
func waitLookups(t *testing.T, st *store.Store, what string, count func(*store.Store) int, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); count(st) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, want %d", what, count(st), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Lookups that arrive while a statement runs go together in the next one,
// each answered with its own token's owner, at most 64 per statement.
func TestLookupsQueuedTogetherAnswerEachItsOwn(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
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

	release := blockLookups(t, st)
	// The first lookups take the workers and wait on the lock; the others
	// queue behind them: 100 lookups, the same token several times over.
	first := make(chan error, store.LookupWorkers)
	for i := range store.LookupWorkers {
		go func() { _, err := st.ParticipantGetByTokenHash(ctx, toks[0].hash); first <- err }()
		waitLookups(t, st, "lookups the workers took", store.TakenLookups, i+1)
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
			o, err := st.ParticipantGetByTokenHash(ctx, toks[i%len(toks)].hash)
			answers[i] = answer{o, err}
		})
	}
	waitLookups(t, st, "lookups queued", store.QueuedLookups, n)
	release()
	wg.Wait()
	for range store.LookupWorkers {
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
	if got := store.LargestLookup(st); got != 64 {
		t.Fatalf("the largest statement carried %d lookups, want 64 (100 queued, 64 at most)", got)
	}
}

// A caller whose deadline passes while its lookup waits answers at once,
// with the database-unavailable error a statement cut short gives; the
// lookups behind it are still answered.
func TestLookupAnswersAtItsCallersDeadline(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	_, pid := agreement(t, st)
	hash := claim(t, st, pid)
	release := blockLookups(t, st)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := st.ParticipantGetByTokenHash(ctx, hash)
	if !errors.Is(err, room.ErrUnavailable) || time.Since(start) > 5*time.Second {
		t.Fatalf("lookup past its deadline: %v after %v, want room.ErrUnavailable at the deadline", err, time.Since(start))
	}
	done := make(chan error, 1)
	go func() { _, err := st.ParticipantGetByTokenHash(context.Background(), hash); done <- err }()
	release()
	if err := <-done; err != nil {
		t.Fatalf("the next lookup: %v", err)
	}
}

// Closing the store answers the lookups queued; later ones fail as a
// closed pool does instead of waiting forever.
func TestLookupsAnsweredAcrossClose(t *testing.T) {
	t.Parallel()
	st, err := store.Open(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	_, pid := agreement(t, st)
	hash := claim(t, st, pid)
	release := blockLookups(t, st)
	errs := make(chan error, 10)
	for range 10 {
		go func() { _, err := st.ParticipantGetByTokenHash(context.Background(), hash); errs <- err }()
	}
	waitLookups(t, st, "lookups taken or queued", func(st *store.Store) int { return store.TakenLookups(st) + store.QueuedLookups(st) }, 10)
	closed := make(chan struct{})
	go func() { st.Close(); close(closed) }()
	time.Sleep(50 * time.Millisecond)
	release()
	for range 10 {
		if err := <-errs; err != nil {
			t.Fatalf("a lookup queued before Close: %v", err)
		}
	}
	<-closed
	if _, err := st.ParticipantGetByTokenHash(context.Background(), hash); err == nil {
		t.Fatal("a lookup after Close succeeded")
	}
}

// Only the lookups' own connections force the generic plan: the serving
// pool plans as PostgreSQL chooses.
func TestOnlyLookupConnectionsForceTheGenericPlan(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	var mode string
	if err := store.Pool(st).QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&mode); err != nil || mode != "auto" {
		t.Fatalf("the serving pool's plan_cache_mode: %q, %v; want auto", mode, err)
	}
	if err := store.LookupPool(st).QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&mode); err != nil || mode != "force_generic_plan" {
		t.Fatalf("the lookup pool's plan_cache_mode: %q, %v; want force_generic_plan", mode, err)
	}
}
