package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// Every participant request starts with its token's lookup (a 304 is
// nothing else), and the lookups of concurrent requests are alike: one
// indexed row each. The lookups queue here and a worker sends them
// together, in one statement per round trip (issue 8): the tokens that
// arrived while the statements in flight ran go in the next. Alone, a
// lookup is sent at once; under load the database is woken, and pgx's
// round trip is paid, once for many requests instead of once each.
//
// This is not a cache: a lookup's statement is always sent after the
// lookup was queued, so it sees every commit its request could know of (a
// revocation answered before the request was sent is in it), exactly as a
// statement of its own would.
type lookups struct {
	crew  // its mu guards queue, largest and taken
	s     *Store
	pool  *pgxpool.Pool
	q     *dbsqlc.Queries
	queue []*lookup
	// largest is the most lookups one statement has carried, taken how
	// many the workers have taken in all (for tests).
	largest, taken int
}

// lookupWorkers statements run at once, each on its own connection;
// maxLookups bounds the tokens of one statement. One worker makes a lookup
// wait for the statement in flight before its own, and makes the
// statements larger: make bench's 304 load (three rounds each, same
// session length) cost PostgreSQL 19-29 µs per request with one worker
// against 27-40 µs with two, for the same service CPU, and its ratio rose
// from 0.30-0.32 to 0.33-0.36 (CPU-cost ratio 0.29-0.32 to 0.35-0.39).
const (
	lookupWorkers = 1
	maxLookups    = 64
)

type lookup struct {
	hash  []byte
	owner TokenOwner
	err   error
	done  chan struct{}
}

// lookupPool opens the lookups' own connections, on cfg's server and
// settings. PostgreSQL plans a prepared statement for each execution until
// the plan for any values looks no dearer, and a list of tokens of unknown
// length never does: planned each time, a lookup cost about four times as
// much. Here the generic plan is always used; no other statement runs on
// these connections.
func lookupPool(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	cfg = cfg.Copy()
	cfg.MaxConns, cfg.MinConns = lookupWorkers, 0
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	return pool, nil
}

func newLookups(s *Store, pool *pgxpool.Pool) *lookups {
	l := &lookups{s: s, pool: pool, q: dbsqlc.New(pool)}
	l.start(lookupWorkers, l.work)
	return l
}

// ParticipantGetByTokenHash finds the owner of a participant token by the
// token's hash, or room.ErrNotFound. It reads the database on every call.
func (s *Store) ParticipantGetByTokenHash(ctx context.Context, tokenHash []byte) (TokenOwner, error) {
	return s.look.get(ctx, tokenHash)
}

func (l *lookups) get(ctx context.Context, hash []byte) (TokenOwner, error) {
	k := &lookup{hash: hash}
	l.mu.Lock()
	if l.stopped {
		// The store is closing: the lookup runs alone, as it would
		// without a worker (and fails once the pool has closed).
		l.mu.Unlock()
		l.send([]*lookup{k})
		return k.owner, k.err
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
		return TokenOwner{}, interpretError("get participant by token", ctx.Err())
	}
}

func (l *lookups) work() {
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
			l.send(batch)
			continue
		}
		if stopped {
			return
		}
		l.idle()
	}
}

// send looks up batch in one statement and answers each lookup.
func (l *lookups) send(batch []*lookup) {
	hashes := make([][]byte, len(batch))
	for i, k := range batch {
		hashes[i] = k.hash
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.s.timeout)
	rows, err := l.q.ParticipantAuth(ctx, hashes)
	cancel()
	err = interpretError("get participant by token", err)
	found := make(map[string]*dbsqlc.ParticipantAuthRow, len(rows))
	for i := range rows {
		found[string(rows[i].TokenHash)] = &rows[i]
	}
	for _, k := range batch {
		switch r := found[string(k.hash)]; {
		case err != nil:
			k.err = err
		case r == nil:
			k.err = room.ErrNotFound
		default:
			k.owner = TokenOwner{
				ParticipantID: r.ID, AgreementID: r.AgreementID, InvitationID: r.InvitationID, TokenHash: r.TokenHash, RevokedAt: r.RevokedAt, Kind: r.Kind,
				Version: r.Version, CurrentRevision: int(r.CurrentRevision), Deadline: r.Deadline, OutcomeStatus: r.OutcomeStatus,
			}
		}
		if k.done != nil {
			close(k.done)
		}
	}
}

// stop answers what is queued, ends the worker and closes its connection;
// later lookups fail.
func (l *lookups) stop() {
	l.crew.stop()
	l.pool.Close()
}
