package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
)

// The appender runs concurrent appends to different agreements as one
// transaction (issue 8). An append is mostly fixed cost: two round trips,
// BEGIN, COMMIT and its WAL flush, and the wake-ups around each; a batch of
// n pays them once. Each append in a batch still takes its own agreement's
// row lock, reads its own state after the lock, and is judged by its own
// decide, exactly as alone.
//
// Rules that keep a batch equivalent to its appends one after the other:
//   - At most one append per agreement is in flight across the replica's
//     batches: the next one waits in the queue, and then reads what the
//     previous committed (its chain head, counters and outcome).
//   - A batch locks its agreements in id order, and never waits for a lock
//     another transaction holds: that append leaves the batch and runs
//     alone (and waits there), so one held lock stalls no other agreement.
//   - A refusal (decide's error or a write of nothing) touches only its
//     own append; a statement that fails ends the batch, and each of its
//     appends then runs again alone (Append's own path, with its retries).
//     Running again is safe even after an ambiguous commit: the idempotency
//     key finds the stored event.
//   - An append that runs alone keeps its agreement busy until it ends.
//     Otherwise the next append to that agreement would join a batch, find
//     the lock held by the one running alone, and run alone too: one
//     skipped lock would turn every later append to the agreement into a
//     transaction of its own, each waiting for the previous one's lock.
type appender struct {
	crew // its mu guards the fields below
	s    *Store
	// turn lets one batch at a time take from the queue, read and decide;
	// the next batch starts while this one writes and waits for its
	// commit. Appends arriving meanwhile gather in the queue, so batches
	// grow with the load instead of splitting it between the workers.
	turn sync.Mutex
	// queue holds appends not yet taken, oldest first.
	queue []*appendJob
	// busy holds the agreements of the appends in the batches running now,
	// and of the appends sent from a batch to run alone (held) until they end.
	busy map[uuid.UUID]bool
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
const (
	appendWorkers = 2
	maxBatch      = 32
)

// appendJob is one append waiting for, or in, a batch.
type appendJob struct {
	req    AppendRequest
	decide func(st *AppendState) (AppendWrite, error)
	// err is decide's error, or the batch's when it had only this append.
	err error
	// alone: the batch failed; the caller runs this append again by itself.
	alone bool
	// held: alone, and the agreement stays busy until the caller's run by
	// itself ends (appender.release). Guarded by the appender's mu.
	held bool
	done chan struct{}
	// abandoned: the caller stopped waiting; decide must not run any more.
	abandoned atomic.Bool
}

func newAppender(s *Store) *appender {
	a := &appender{s: s, busy: map[uuid.UUID]bool{}}
	a.start(appendWorkers, a.work)
	return a
}

// run queues j and waits for its batch: err is j's result. alone reports
// that j must run by itself instead: its batch failed as a whole, its
// agreement's lock was held elsewhere, or the store is closing. When j.held
// is set too, the caller must call release once that run ends.
func (a *appender) run(ctx context.Context, j *appendJob) (alone bool, err error) {
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
		return j.alone, j.err
	case <-ctx.Done():
	}
	select {
	case <-j.done: // finished as the deadline passed: its result stands
		return j.alone, j.err
	default:
	}
	// The caller's deadline (the database timeout of its request) passed
	// first: it answers now, as it would from a query cut short. A queued
	// append leaves the queue; one already taken is abandoned, so its batch
	// skips it if it has not judged it yet, and otherwise may still store
	// it, as a commit cut short may (a retry with the same key replays it).
	a.mu.Lock()
	if i := slices.Index(a.queue, j); i >= 0 {
		a.queue = slices.Delete(a.queue, i, i+1)
	}
	j.abandoned.Store(true)
	a.mu.Unlock()
	a.release(j) // its batch may have ended meanwhile and held the agreement for a run that will not come
	return false, interpretError("append", ctx.Err())
}

// release ends j's hold on its agreement, if it has one, so that batches
// take that agreement's appends again.
func (a *appender) release(j *appendJob) {
	a.mu.Lock()
	held := j.held
	if held {
		j.held = false
		delete(a.busy, j.req.AgreementID)
	}
	waiting := len(a.queue) > 0
	a.mu.Unlock()
	if held && waiting {
		a.kick()
	}
}

// take removes the next batch from the queue: the oldest appends whose
// agreements no running batch holds, one per agreement, at most maxBatch.
func (a *appender) take() []*appendJob {
	var batch []*appendJob
	kept := a.queue[:0]
	for _, j := range a.queue {
		id := j.req.AgreementID
		if len(batch) < maxBatch && !a.busy[id] {
			a.busy[id] = true
			batch = append(batch, j)
			continue
		}
		kept = append(kept, j)
	}
	clear(a.queue[len(kept):])
	a.queue = kept
	return batch
}

func (a *appender) work() {
	for {
		a.turn.Lock()
		a.mu.Lock()
		batch := a.take()
		a.largest = max(a.largest, len(batch))
		more := len(batch) > 0 && len(a.queue) > 0
		stopped := a.stopped
		var left []*appendJob
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
		a.runBatch(batch)
		a.mu.Lock()
		waiting := len(a.queue) > 0
		a.mu.Unlock()
		if waiting {
			a.kick()
		}
	}
}

// runBatch runs batch and hands each append its result. The agreement of
// an append that must now run alone stays busy (held) until that run ends;
// every other agreement of the batch is free again.
func (a *appender) runBatch(batch []*appendJob) {
	ctx, cancel := context.WithTimeout(context.Background(), a.s.timeout)
	defer cancel()
	pass := sync.OnceFunc(a.turn.Unlock)
	err := a.s.appendBatch(ctx, batch, true, pass)
	pass() // the batch ended before it decided
	a.mu.Lock()
	for _, j := range batch {
		switch {
		case err == nil:
		case len(batch) == 1:
			j.err = err
		default:
			j.alone = true
		}
		if j.alone {
			a.aloneRuns++
		}
		if j.alone && !j.abandoned.Load() {
			j.held = true
		} else {
			delete(a.busy, j.req.AgreementID)
		}
	}
	a.mu.Unlock()
	for _, j := range batch {
		close(j.done)
	}
}

// errAbandoned is the result of an append whose caller stopped waiting.
var errAbandoned = errors.New("store: append abandoned by its caller")

// decideSafely runs decide, turning a panic into this append's error: a
// worker serves many requests, and one bad decision must not end them all.
func decideSafely(j *appendJob, st *AppendState) (w AppendWrite, err error) {
	if j.abandoned.Load() {
		return AppendWrite{}, errAbandoned
	}
	defer func() {
		if r := recover(); r != nil {
			w, err = AppendWrite{}, fmt.Errorf("store: append: decide panicked: %v", r)
		}
	}()
	return j.decide(st)
}
