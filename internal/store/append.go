package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// AppendRequest names what an append locks and reads.
type AppendRequest struct {
	// TokenHash is the hash of the participant token presented. The append
	// locks the agreement of the token's owner and then reads the owner
	// again, so the credential is checked under the lock that revocation
	// takes too.
	TokenHash []byte
	// AgreementID, when the caller knows the token's agreement (a cache),
	// locks it by id instead of through the token's owner, one index probe
	// less; an owner in another agreement is then refused (nil Holder).
	AgreementID    uuid.UUID
	IdempotencyKey string
	// WithRevision reads the current revision (with its History) too; a
	// caller holding it in a cache leaves it out.
	WithRevision bool
	// SkipRoster leaves the roster out (AppendState.Roster stays nil): an
	// action that cannot decide the outcome (a comment, not a terminal
	// decision) needs only the stored outcome, which a decision sets in the
	// same transaction as itself. The roster read scans every participant
	// of the agreement, most of an append's database work.
	SkipRoster bool
	// Signature, when set, is the event's participant signature: the append
	// reads whether the token's owner already stored it
	// (AppendState.SignatureEvent).
	Signature []byte
}

// TokenHolder is the participant a token was issued to, read under the
// agreement's lock, with its counters.
type TokenHolder struct {
	RosterMember
	AgreementID  uuid.UUID
	InvitationID uuid.UUID
	TokenHash    []byte
	// PublicKey is the key its claim bound; every event it posts must be
	// signed with it. Nil for a claim without a key.
	PublicKey []byte
}

// AppendState is what an append read in one round trip, after taking the
// agreement's row lock: nothing in it can change before the transaction
// ends, and a revocation committed before the lock was granted is in it.
type AppendState struct {
	// Holder is the token's owner; nil when no participant holds it (and
	// then nothing was locked).
	Holder    *TokenHolder
	Agreement Agreement
	// Roster holds what the decision rule reads of every participant that
	// is required or has decided: ID, Required and Decision. (An optional
	// participant without a decision changes no outcome.) Nil when the
	// request skipped it.
	Roster []RuleMember
	// Prior is the holder's event stored under the idempotency key, nil if
	// the key is new.
	Prior *Event
	// Revision is the current revision when the request asked for it.
	Revision *Revision
	// SignatureEvent is the holder's event that stores the request's
	// Signature, nil when none does (or the request named none).
	SignatureEvent *uuid.UUID
}

// AppendWrite is what an append transaction writes before it commits.
// Event nil and Outcome nil commit nothing.
type AppendWrite struct {
	// Event is the event to append: it becomes the chain head, counts for
	// its participant and, when terminal, is its decision.
	Event *Event
	// Outcome, when set, is the final outcome to store: decided by Event,
	// or an expiry found under the lock when Event is nil.
	Outcome *room.Outcome
	// Artifact is CONSENSUS.md of a reached Outcome.
	Artifact *Artifact
	// Result is what the decision tells its caller, written or not: Append
	// returns it, AppendMany keeps it in the item. The store never reads it.
	Result any
}

// empty reports a write of nothing (a refusal, a replay): nothing to commit.
func (w AppendWrite) empty() bool { return w.Event == nil && w.Outcome == nil }

// Decide judges the state an append read under its agreement's lock and
// returns what to write. It must not have effects outside the transaction
// (a deadlock runs it again) and must keep nothing for its caller in
// captured variables: it may run on another goroutine than its caller's,
// and even after the caller stopped waiting. What the caller needs comes
// back as the write's Result. An error refuses the append (nothing is
// written) and comes back unchanged.
type Decide func(st *AppendState) (AppendWrite, error)

// AppendItem is one append of AppendMany: what it asks for and how it is
// judged, then, once AppendMany returned, what became of it.
type AppendItem struct {
	Request AppendRequest
	Decide  Decide
	// Withdrawn, once set (from any goroutine), keeps Decide from being
	// called: the item is refused with ErrWithdrawn. Whoever gave the item
	// sets it when nobody waits for its result any more.
	Withdrawn atomic.Bool

	// Locked reports that another transaction held the item's agreement
	// (or that it names none that exists): it was not judged and nothing
	// of it was written.
	Locked bool
	// Result is the Result of the write Decide returned.
	Result any
	// Err is Decide's error, or why its write was refused.
	Err error
}

// ErrWithdrawn is the Err of an AppendItem withdrawn before it was judged.
var ErrWithdrawn = errors.New("store: append withdrawn by its caller")

// Append runs one append in a transaction of two round trips. The first
// sends BEGIN, locks the agreement of the token's holder (SELECT … FOR
// UPDATE; by id when req.AgreementID names it) and, after the lock is
// granted, reads the holder (revoked? counters), the event it stored under
// the idempotency key, what the rule needs of the roster (unless skipped)
// and, if asked, the current revision. decide judges that state and
// returns what to write; the second round trip writes it and commits. An
// unknown token locks nothing and reaches decide with a nil Holder. A
// serialization failure or deadlock runs it all again (up to five times).
// It returns the Result of decide's write; an error from decide rolls back
// this append and comes back unchanged; store errors are interpreted.
func (s *Store) Append(ctx context.Context, req AppendRequest, decide Decide) (any, error) {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		it := AppendItem{Request: req, Decide: decide}
		if err = s.appendItems(ctx, []*AppendItem{&it}, false, nil); err == nil {
			return it.Result, it.Err
		}
		if !retryable(err) || ctx.Err() != nil {
			return nil, err
		}
		time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
	}
	return nil, err
}

// AppendMany runs items, each naming its agreement in
// Request.AgreementID, in one transaction, as Append runs one: each locks
// and reads its own agreement and is judged by its own Decide, exactly as
// alone. Items of the same agreement are judged one after the other in
// their order in items, each seeing what the previous ones wrote (its
// chain head, counters, idempotency keys, outcome) under the lock the
// first one took; they share the transaction's commit. An item whose
// agreement another transaction holds is not waited for: it is left out
// (Locked), and so is every later item of that agreement, so one held
// lock never stalls the others and no item is judged before an earlier
// one of its agreement. A refusal (Decide's error, a panic in Decide, a
// write of nothing) touches only its own item. The error is the
// transaction's: nothing was committed, and no item's Result counts.
// decided, if not nil, is called once every item is judged, before the
// last writes are sent. There is no retry.
func (s *Store) AppendMany(ctx context.Context, items []*AppendItem, decided func()) error {
	return s.appendItems(ctx, items, true, decided)
}

// appendItems runs items in one transaction; skipLocked (AppendMany) leaves
// out an item whose agreement another transaction holds.
//
// It reads in rounds. The first round reads, in one round trip, the state
// of every item: the locks, then each item's holder, prior event and
// extras. Each agreement's items are then judged in order, the state of
// each after the first derived from the one before it and its write (see
// chain), so a crowded room costs no more round trips than a quiet one.
// Only a write whose effects the chain does not derive (a decision, an
// outcome, an artifact) sends the agreement's later items to the
// next round, which sends the writes so far and reads their state again.
func (s *Store) appendItems(ctx context.Context, items []*AppendItem, skipLocked bool, decided func()) error {
	tx, err := s.beginPiped(ctx)
	if err != nil {
		return err
	}
	defer tx.close(ctx)
	var begin pipeline
	begin.exec("BEGIN")
	done, last, hooks, err := judgeItems(ctx, tx.conn, begin, items, skipLocked)
	if err != nil {
		return err
	}
	if decided != nil {
		decided()
	}
	if last == nil {
		return nil // nothing written: close rolls back, which costs what a commit would
	}
	if err := tx.commit(ctx, last, hooks, nil); err != nil {
		return err
	}
	announce(s.queries, done)
	return nil
}

// committed is an item's write and the agreement it locked, for after the
// commit.
type committed struct {
	write     AppendWrite
	agreement uuid.UUID
}

// announce tells q what the writes of done changed, once committed: each
// room has a new version, and the observer hears what an EventInsert or
// AgreementSetOutcome would have told it.
func announce(q queries, done []committed) {
	for _, c := range done {
		if c.write.empty() {
			continue
		}
		q.roomChanged(c.agreement)
		if c.write.Event != nil {
			q.note(noteEvent, c.write.Event.Action)
		}
		if c.write.Outcome != nil && c.write.Outcome.Final() {
			q.note(noteOutcome, c.write.Outcome.Status)
		}
	}
}

// judgeItems reads and judges items on db, in a transaction that pending
// (sent with the first reads) begins or that db already is, and returns
// each item's write, the statements that write the last of them, which
// the caller sends (with COMMIT, when it began the transaction; nil
// statements when nothing is to be written), and the jobs the writes
// queue (webhook deliveries where an endpoint was ever registered, the
// outcome emails of an outcome made final), for the caller to queue
// before its commit (see pipedTx.commit).
func judgeItems(ctx context.Context, db batchSender, pending pipeline, items []*AppendItem, skipLocked bool) ([]committed, *pipeline, []agreementJobs, error) {
	// Locks in agreement order: transactions never wait for each other in a
	// cycle. The sort is stable: items of one agreement keep their order.
	slices.SortStableFunc(items, func(a, b *AppendItem) int {
		return bytes.Compare(a.Request.AgreementID[:], b.Request.AgreementID[:])
	})
	// done[i] is items[i]'s write, for after the commit.
	done := make([]committed, len(items))
	index := make(map[*AppendItem]int, len(items))
	for i, it := range items {
		index[it] = i
	}
	// pending holds the writes not sent yet: each round trip sends them
	// before its reads, which then see them.
	var events dbsqlc.EventAppendBatchParams
	var hooks []agreementJobs
	wrote := false
	// The statements take arrays, and PostgreSQL would plan each execution
	// anew for its arrays' values (see TokenOwners): the generic plan is
	// the same nested loop of index probes.
	pending.exec("SET LOCAL plan_cache_mode = force_generic_plan")
	round := items
	for len(round) > 0 {
		states := make([]*AppendState, len(round))
		for i := range states {
			states[i] = &AppendState{}
		}
		read := pending
		pending = pipeline{}
		flushEvents(ctx, &read, &events)
		queueReads(ctx, &read, round, skipLocked, states)
		if err := read.send(ctx, db); err != nil {
			return nil, nil, nil, err
		}
		var next []*AppendItem
		for first := 0; first < len(round); {
			id := round[first].Request.AgreementID
			end := first + 1
			for end < len(round) && round[end].Request.AgreementID == id && id != uuid.Nil {
				end++
			}
			group, groupStates := round[first:end], states[first:end]
			first = end
			if skipLocked && groupStates[0].Agreement.ID == uuid.Nil {
				for _, it := range group {
					it.Locked = true // locked elsewhere (or unknown): for the caller to run alone, after a wait
				}
				continue
			}
			var c chain
			for k, it := range group {
				st := groupStates[k]
				if k > 0 {
					if !c.open {
						next = append(next, group[k:]...)
						break
					}
					c.derive(st, it.Request)
				}
				if st.Holder != nil && st.Holder.AgreementID != st.Agreement.ID {
					st.Holder = nil // a token's owner never moves, but a caller's AgreementID may be wrong: refuse rather than write across agreements
				}
				wr, err := decideSafely(it, st)
				if err != nil {
					it.Err = err
					c.follow(st, AppendWrite{})
					continue
				}
				it.Result = wr.Result
				if !wr.empty() {
					if wr.Event != nil && wr.Event.Revision != st.Agreement.CurrentRevision {
						// EventAppendBatch counts a participant's events on one
						// revision: an event on another starts a statement of its own.
						flushEvents(ctx, &pending, &events)
					}
					if err := queueWrite(ctx, &pending, &events, st.Agreement.ID, wr); err != nil {
						it.Err = err
						c.follow(st, AppendWrite{})
						continue
					}
					done[index[it]] = committed{wr, st.Agreement.ID}
					wrote = true
					hooks = jobsOf(hooks, st.Agreement, wr)
				}
				c.follow(st, wr)
			}
		}
		round = next
	}
	if !wrote {
		return done, nil, nil, nil
	}
	flushEvents(ctx, &pending, &events)
	return done, &pending, hooks, nil
}

// flushEvents adds the events gathered so far to p as one statement, and
// empties them.
func flushEvents(ctx context.Context, p *pipeline, events *dbsqlc.EventAppendBatchParams) {
	if len(events.Ids) == 0 {
		return
	}
	batch := *events
	*events = dbsqlc.EventAppendBatchParams{}
	p.add(func(db dbsqlc.DBTX) error {
		return interpretError("append event", dbsqlc.New(db).EventAppendBatch(ctx, batch))
	})
}

// decideSafely runs it.Decide unless it was withdrawn, turning a panic
// into this item's error: the items sharing its transaction must not fail
// with it.
func decideSafely(it *AppendItem, st *AppendState) (w AppendWrite, err error) {
	if it.Withdrawn.Load() {
		return AppendWrite{}, ErrWithdrawn
	}
	defer func() {
		if r := recover(); r != nil {
			w, err = AppendWrite{}, fmt.Errorf("store: append: decide panicked: %v", r)
		}
	}()
	return it.Decide(st)
}

// revisionStep reads the agreement's current revision into out.
func revisionStep(ctx context.Context, agreementID uuid.UUID, out **Revision) step {
	return func(db dbsqlc.DBTX) error {
		r, err := dbsqlc.New(db).RevisionGetCurrent(ctx, agreementID)
		if err != nil {
			return interpretError("get current revision", err)
		}
		rev := revisionFrom(r)
		*out = &rev
		return nil
	}
}
