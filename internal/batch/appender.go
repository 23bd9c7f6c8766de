package batch

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/store"
)

// The appender runs concurrent appends as one transaction
// (store.AppendMany), whether to different agreements or to the same one. An append is mostly fixed cost: two round
// trips, BEGIN, COMMIT and its WAL flush, and the wake-ups around each; a
// batch of n pays them once. Each append in a batch still takes its own
// agreement's row lock, reads its own state after the lock, and is judged
// by its own decide, exactly as alone.
//
// Rules that keep a batch equivalent to its appends one after the other:
//   - The appends of one agreement are in flight in one batch at a time:
//     a batch takes up to maxPerAgreement of them, oldest first, and the
//     store judges them one after the other under the lock the first one
//     took, each reading what the previous one wrote (its chain head,
//     counters, idempotency keys and outcome); they share the commit. The
//     later ones wait in the queue until that batch ended, and then read
//     what it committed.
//   - A batch never waits for a lock another transaction holds: that
//     append leaves the batch (store.AppendItem.Locked) and runs alone
//     (and waits there), so one held lock stalls no other agreement.
//   - A refusal (decide's error or a write of nothing) touches only its
//     own append; a statement that fails ends the batch, and each of its
//     appends then runs again alone (store.Append, with its retries).
//     Running again is safe even after an ambiguous commit: the idempotency
//     key finds the stored event.
//   - An append that runs alone keeps its agreement busy until it ends.
//     Otherwise the next append to that agreement would join a batch, find
//     the lock held by the one running alone, and run alone too: one
//     skipped lock would turn every later append to the agreement into a
//     transaction of its own, each waiting for the previous one's lock.
type appender struct {
	crew // its mu guards the fields below
	st   *store.Store
	// turn lets one batch at a time take from the queue, read and decide;
	// the next batch starts while this one writes and waits for its
	// commit. Appends arriving meanwhile gather in the queue, so batches
	// grow with the load instead of splitting it between the workers.
	turn sync.Mutex
	// queue holds appends not yet taken, oldest first.
	queue []*job
	// busy counts, per agreement, the appends in the batch running now and
	// those sent from a batch to run alone (held) until they end.
	busy map[uuid.UUID]int
	// largest is the most appends one batch has held, aloneRuns how many
	// appends its batches sent to run alone (both for tests).
	largest, aloneRuns int
}

// appendWorkers is how many batches one replica runs at once: while one
// writes and waits for its commit's WAL flush, the other reads and decides
// (turn keeps it to one at a time). Since a batch's common work is one
// statement whatever its size, larger batches cost the database less per
// append. make bench, append only, three rounds each: one worker made
// batches of 3.7 appends and reached 0.55 of the baseline (PostgreSQL CPU
// 284-349 µs per append) but idled the machine during each commit; two
// free workers made batches of 2.6 and reached 0.54 (409-550 µs); two
// taking turns, 2.7 and 0.56-0.59 (367-494 µs).
//
// maxPerAgreement bounds the appends of one agreement in a batch. They
// share the batch's reads and its commit, which with fsync on is most of
// an append's time while it holds the agreement's lock; the store derives
// each one's state from the previous one's write (a decision or an
// outcome costs the rest a round trip).
const (
	appendWorkers   = 2
	maxBatch        = 32
	maxPerAgreement = 16
)

// job is one append waiting for, or in, a batch. Its AppendItem carries
// the request, and once the batch ran, its result; Withdrawn is set when
// the caller stopped waiting, so that decide no longer runs.
type job struct {
	store.AppendItem
	// alone: the batch failed or left the append out; the caller runs it
	// again by itself.
	alone bool
	// held: alone, and the agreement stays busy until the caller's run by
	// itself ends (appender.release). Guarded by the appender's mu.
	held bool
	done chan struct{}
}

func newAppender(st *store.Store) *appender {
	a := &appender{st: st, busy: map[uuid.UUID]int{}}
	a.start(appendWorkers, a.work)
	return a
}

// Append runs one append as store.Append does and returns the Result of
// decide's write. When the caller names the agreement (req.AgreementID),
// appends to other agreements that arrive meanwhile share its
// transaction; each still locks and reads its own agreement and is judged
// alone. decide then runs on a worker's goroutine, and may run again (a
// failed batch reruns its appends alone) or, rarely, just after Append
// returned with the caller's deadline: what it tells its caller goes in
// its write's Result, never in captured variables.
func (b *Batcher) Append(ctx context.Context, req store.AppendRequest, decide store.Decide) (any, error) {
	if req.AgreementID == uuid.Nil {
		return b.st.Append(ctx, req, decide)
	}
	j := &job{}
	j.Request, j.Decide = req, decide
	alone, err := b.apx.run(ctx, j)
	if !alone {
		switch {
		case err == nil:
			return j.Result, nil
		case !store.Retryable(err) || ctx.Err() != nil:
			return nil, err
		}
		time.Sleep(10 * time.Millisecond) // as store.Append pauses before its next attempt
	}
	defer b.apx.release(j)
	return b.st.Append(ctx, req, decide)
}

// run queues j and waits for its batch: err is j's result. alone reports
// that j must run by itself instead: its batch failed as a whole, its
// agreement's lock was held elsewhere, or the batcher is closing. When
// j.held is set too, the caller must call release once that run ends.
func (a *appender) run(ctx context.Context, j *job) (alone bool, err error) {
	j.done = make(chan struct{})
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return true, nil
	}
	a.queue = append(a.queue, j)
	a.mu.Unlock()
	a.kick()
	select {
	case <-j.done:
		return j.alone, j.Err
	case <-ctx.Done():
	}
	select {
	case <-j.done: // finished as the deadline passed: its result stands
		return j.alone, j.Err
	default:
	}
	// The caller's deadline (the database timeout of its request) passed
	// first: it answers now, as it would from a query cut short. A queued
	// append leaves the queue; one already taken is withdrawn, so its batch
	// skips it if it has not judged it yet, and otherwise may still store
	// it, as a commit cut short may (a retry with the same key replays it).
	a.mu.Lock()
	if i := slices.Index(a.queue, j); i >= 0 {
		a.queue = slices.Delete(a.queue, i, i+1)
	}
	j.Withdrawn.Store(true)
	a.mu.Unlock()
	a.release(j) // its batch may have ended meanwhile and held the agreement for a run that will not come
	return false, abandoned("append", ctx)
}

// release ends j's hold on its agreement, if it has one, so that batches
// take that agreement's appends again.
func (a *appender) release(j *job) {
	a.mu.Lock()
	held := j.held
	if held {
		j.held = false
		a.free(j.Request.AgreementID)
	}
	waiting := len(a.queue) > 0
	a.mu.Unlock()
	if held && waiting {
		a.kick()
	}
}

// free counts one append of agreement id as ended.
func (a *appender) free(id uuid.UUID) {
	if a.busy[id]--; a.busy[id] <= 0 {
		delete(a.busy, id)
	}
}

// take removes the next batch from the queue: the oldest appends whose
// agreements no running batch or lone run holds, at most maxPerAgreement
// per agreement and maxBatch in all. An append is taken only when every
// older one of its agreement is (they stay in order).
func (a *appender) take() []*job {
	var batch []*job
	mine := map[uuid.UUID]int{}
	left := map[uuid.UUID]bool{} // agreements with an append left in the queue
	kept := a.queue[:0]
	for _, j := range a.queue {
		id := j.Request.AgreementID
		if len(batch) < maxBatch && (a.busy[id] == 0 || mine[id] > 0) && mine[id] < maxPerAgreement && !left[id] {
			a.busy[id]++
			mine[id]++
			batch = append(batch, j)
			continue
		}
		left[id] = true
		kept = append(kept, j)
	}
	clear(a.queue[len(kept):])
	a.queue = kept
	return batch
}

func (a *appender) work() {
	items := make([]*store.AppendItem, 0, maxBatch) // this worker's, for each batch in turn
	for {
		a.turn.Lock()
		a.mu.Lock()
		batch := a.take()
		a.largest = max(a.largest, len(batch))
		more := len(batch) > 0 && len(a.queue) > 0
		stopped := a.stopped
		var left []*job
		if len(batch) == 0 && stopped {
			// What stays queued waits for an agreement that is busy (an
			// append running alone, or the other worker's batch), which
			// no stopped worker would take later: it runs alone too,
			// after that one (the agreement's lock queues it).
			left, a.queue = a.queue, nil
		}
		a.mu.Unlock()
		if len(batch) == 0 {
			a.turn.Unlock()
			if stopped {
				for _, j := range left {
					j.alone = true
					close(j.done)
				}
				return
			}
			a.idle()
			continue
		}
		if more {
			a.kick() // another worker may take what this batch could not
		}
		items = items[:0]
		for _, j := range batch {
			items = append(items, &j.AppendItem)
		}
		a.runBatch(batch, items)
		clear(items)
		a.mu.Lock()
		waiting := len(a.queue) > 0
		a.mu.Unlock()
		if waiting {
			a.kick()
		}
	}
}

// runBatch runs batch (whose items are items) and hands each append its
// result. The agreement of an append that must now run alone stays busy
// (held) until that run ends; every other agreement of the batch is free
// again.
func (a *appender) runBatch(batch []*job, items []*store.AppendItem) {
	ctx, cancel := context.WithTimeout(context.Background(), a.st.Timeout())
	defer cancel()
	pass := sync.OnceFunc(a.turn.Unlock)
	err := a.st.AppendMany(ctx, items, pass)
	pass() // the batch ended before it decided
	a.mu.Lock()
	for _, j := range batch {
		switch {
		case err == nil:
			j.alone = j.Locked
		case len(batch) == 1:
			j.Err = err
		default:
			j.alone = true
		}
		if j.alone {
			a.aloneRuns++
		}
		if j.alone && !j.Withdrawn.Load() {
			j.held = true
		} else {
			a.free(j.Request.AgreementID)
		}
	}
	a.mu.Unlock()
	for _, j := range batch {
		close(j.done)
	}
}
