package batch

import (
	"context"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// Every participant request starts with its token's lookup (a 304 is
// nothing else), and the lookups of concurrent requests are alike: one
// indexed row each. The lookups queue here and a worker sends them
// together, in one statement per round trip (store.TokenOwners): the
// tokens that arrived while the statement in flight ran go in the next.
// Alone, a lookup is sent at once; under load the database is woken, and
// pgx's round trip is paid, once for many requests instead of once each.
//
// This is not a cache: a lookup's statement is always sent after the
// lookup was queued, so it sees every commit its request could know of (a
// revocation answered before the request was sent is in it), exactly as a
// statement of its own would.
type lookups struct {
	crew  // its mu guards queue, largest and taken
	st    *store.Store
	queue []*lookup
	// largest is the most lookups one statement has carried, taken how
	// many the workers have taken in all (for tests).
	largest, taken int
}

// lookupWorkers statements run at once (store.TokenOwners has a
// connection for each); maxLookups bounds the tokens of one statement. One
// worker makes a lookup wait for the statement in flight before its own,
// and makes the statements larger: make bench's 304 load (three rounds
// each, same session length) cost PostgreSQL 19-29 µs per request with one
// worker against 27-40 µs with two, for the same service CPU, and its ratio
// rose from 0.30-0.32 to 0.33-0.36 (CPU-cost ratio 0.29-0.32 to 0.35-0.39).
const (
	lookupWorkers = 1
	maxLookups    = 64
)

type lookup struct {
	hash  []byte
	owner store.TokenOwner
	err   error
	done  chan struct{}
}

func newLookups(st *store.Store) *lookups {
	l := &lookups{st: st}
	l.start(lookupWorkers, l.work)
	return l
}

func (l *lookups) get(ctx context.Context, hash []byte) (store.TokenOwner, error) {
	k := &lookup{hash: hash}
	l.mu.Lock()
	if l.stopped {
		// The batcher is closing: the lookup runs alone, as it would
		// without a worker.
		l.mu.Unlock()
		return l.st.ParticipantGetByTokenHash(ctx, hash)
	}
	k.done = make(chan struct{})
	l.queue = append(l.queue, k)
	l.mu.Unlock()
	l.kick()
	select {
	case <-k.done:
		return k.owner, k.err
	case <-ctx.Done():
		// The worker still answers k, to nobody: a statement is cheaper
		// to finish than to cut out of a batch.
		return store.TokenOwner{}, abandoned("get participant by token", ctx)
	}
}

func (l *lookups) work() {
	// This worker's, for each statement in turn.
	hashes, owners := make([][]byte, 0, maxLookups), make([]store.TokenOwner, 0, maxLookups)
	for {
		l.mu.Lock()
		n := min(len(l.queue), maxLookups)
		batch := l.queue[:n:n]
		l.queue = append([]*lookup(nil), l.queue[n:]...)
		l.largest = max(l.largest, n)
		l.taken += n
		stopped := l.stopped
		l.mu.Unlock()
		if n > 0 {
			l.send(batch, hashes[:n], owners[:n])
			clear(hashes[:n])
			continue
		}
		if stopped {
			return
		}
		l.idle()
	}
}

// send looks up batch in one statement and answers each lookup; hashes
// and owners are as long as batch.
func (l *lookups) send(batch []*lookup, hashes [][]byte, owners []store.TokenOwner) {
	for i, k := range batch {
		hashes[i] = k.hash
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.st.Timeout())
	err := l.st.TokenOwners(ctx, hashes, owners)
	cancel()
	for i, k := range batch {
		switch {
		case err != nil:
			k.err = err
		case owners[i].ParticipantID == uuid.Nil:
			k.err = room.ErrNotFound
		default:
			k.owner = owners[i]
		}
		close(k.done)
	}
}

// stop answers what is queued and ends the worker; later lookups run
// alone.
func (l *lookups) stop() { l.crew.stop() }
