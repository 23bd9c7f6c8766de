package batch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/batch"
	"github.com/consensus-md/consensus/internal/store"
)

// heldRoom is an agreement with one claimed participant whose lock another
// transaction holds until free is called.
type heldRoom struct {
	id uuid.UUID
	// held has the holding transaction's error once free was called.
	held <-chan error
	// free releases the lock; calling it again does nothing, so a test
	// defers it: a failure must not leave appends waiting on the lock.
	free func()
	// post appends a comment under key in the background; the channel has
	// its result.
	post func(key string) <-chan error
}

func holdRoom(ctx context.Context, t *testing.T, st *store.Store, b *batch.Batcher) *heldRoom {
	t.Helper()
	id, pid := agreement(t, st)
	hash := claim(t, st, pid)
	release := make(chan struct{})
	r := &heldRoom{id: id, held: holdLock(t, st, id, release), free: sync.OnceFunc(func() { close(release) })}
	r.post = func(key string) <-chan error {
		done := make(chan error, 1)
		go func() {
			done <- post(ctx, b, store.AppendRequest{TokenHash: hash, AgreementID: id, IdempotencyKey: key, SkipRoster: true}, nextComment(key))
		}()
		return done
	}
	return r
}

// waitFor polls cond for up to 5 s, failing the test with what it waited for.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// While an append runs alone (its batch found the lock held), the next
// append to the same agreement waits for it in the queue instead of
// joining a batch that would find the lock held again and send it alone
// too: one held lock must not turn every later append into a transaction
// of its own.
func TestAppendRunningAloneKeepsItsAgreementOutOfBatches(t *testing.T) {
	t.Parallel()
	st, b := open(t)
	ctx := context.Background()
	r := holdRoom(ctx, t, st, b)
	defer r.free()
	first := r.post("k1")
	waitFor(t, "the first append sent alone", func() bool { return batch.AloneRuns(b) > 0 })
	second := r.post("k2")
	time.Sleep(300 * time.Millisecond)
	if n, q := batch.AloneRuns(b), batch.QueuedAppends(b); n != 1 || q != 1 {
		t.Fatalf("while the first append waits alone: %d sent alone, %d queued; want 1 and the second one queued", n, q)
	}
	r.free()
	for _, done := range []<-chan error{r.held, first, second} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if a, err := st.AgreementGet(ctx, r.id); err != nil || a.Head.Seq != 2 || batch.AloneRuns(b) != 1 {
		t.Fatalf("head %d, %d sent alone (%v)", a.Head.Seq, batch.AloneRuns(b), err)
	}
}

// An append queued behind one running alone is answered when the batcher
// closes: the workers that stop must not leave it in the queue, waiting
// for an agreement no batch will take again.
func TestCloseAnswersAnAppendQueuedBehindOneRunningAlone(t *testing.T) {
	t.Parallel()
	st, b := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := holdRoom(ctx, t, st, b)
	defer r.free()
	first := r.post("k1")
	waitFor(t, "the first append sent alone", func() bool { return batch.AloneRuns(b) == 1 })
	second := r.post("k2")
	waitFor(t, "the second append queued", func() bool { return batch.QueuedAppends(b) == 1 })
	go b.Close()
	time.Sleep(200 * time.Millisecond) // the workers stop
	r.free()
	if err := <-r.held; err != nil {
		t.Fatal(err)
	}
	<-first
	select {
	case <-second: // stored alone, or refused by the closed pool: either way, answered
	case <-time.After(10 * time.Second):
		t.Fatal("the queued append was not answered 10 s after the batcher closed")
	}
}
