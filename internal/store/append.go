package store

import (
	"bytes"
	"context"
	"slices"
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
	// Reply, with Event, is the reply email the event was read from: its
	// row and its answer are written in the event's transaction.
	Reply *ReplyWrite
}

// empty reports a write of nothing (a refusal, a replay): nothing to commit.
func (w AppendWrite) empty() bool { return w.Event == nil && w.Outcome == nil }

// Append runs one append as part of a transaction of two round trips. The
// first sends BEGIN, locks the agreement of the token's holder (SELECT …
// FOR UPDATE) and, after the lock is granted, reads the holder (revoked?
// counters), the event it stored under the idempotency key, what the rule
// needs of the roster (unless skipped) and, if asked, the current revision.
// decide judges that state (it must not have effects outside the
// transaction: a deadlock reruns it) and returns what to write; the second
// round trip writes it and commits. An unknown token locks nothing and
// reaches decide with a nil Holder. An error from decide rolls back this
// append and comes back unchanged; store errors are interpreted.
//
// When the caller names the agreement (req.AgreementID), appends to other
// agreements that arrive meanwhile share the transaction (appender.go);
// each still locks and reads its own agreement and is judged alone. decide
// then runs on a worker's goroutine, and may run again (a failed batch
// reruns its appends alone) or, rarely, just after Append returned with
// the caller's deadline: whatever it records for its caller, the caller
// reads only after a nil error.
func (s *Store) Append(ctx context.Context, req AppendRequest, decide func(st *AppendState) (AppendWrite, error)) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = s.appendOne(ctx, req, decide, attempt == 0)
		if !retryable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
	}
	return err
}

// appendOne runs one attempt, in a batch when allowed and possible.
func (s *Store) appendOne(ctx context.Context, req AppendRequest, decide func(st *AppendState) (AppendWrite, error), batched bool) error {
	j := &appendJob{req: req, decide: decide}
	if batched && req.AgreementID != uuid.Nil {
		alone, err := s.apx.run(ctx, j)
		if !alone {
			return err
		}
		defer s.apx.release(j)
		j = &appendJob{req: req, decide: decide}
	}
	if err := s.appendBatch(ctx, []*appendJob{j}, false, nil); err != nil {
		return err
	}
	return j.err
}

// appendBatch runs jobs, for distinct agreements, in one transaction: the
// error is the batch's (nothing committed); each job's own refusal is in
// its err. With skipLocked (the appender's batches) a job whose agreement
// another transaction has locked is not waited for: it is left out, marked
// alone, so one held lock never stalls the appends of other agreements.
// decided, if not nil, is called once every job is judged, before the
// writes are sent.
func (s *Store) appendBatch(ctx context.Context, jobs []*appendJob, skipLocked bool, decided func()) error {
	// Locks in agreement order: batches never wait for each other in a cycle.
	slices.SortFunc(jobs, func(a, b *appendJob) int { return bytes.Compare(a.req.AgreementID[:], b.req.AgreementID[:]) })
	tx, err := s.beginPiped(ctx)
	if err != nil {
		return err
	}
	defer tx.close(ctx)

	states := make([]*AppendState, len(jobs))
	for i := range states {
		states[i] = &AppendState{}
	}
	var read pipeline
	read.exec("BEGIN")
	// The statements of a batch take arrays, and PostgreSQL would plan each
	// execution anew for its arrays' values (lookup.go): the generic plan
	// of a batch statement is the same nested loop of index probes.
	read.exec("SET LOCAL plan_cache_mode = force_generic_plan")
	queueReads(ctx, &read, jobs, skipLocked, states)
	if err := tx.send(ctx, &read); err != nil {
		return err
	}
	writes := make([]AppendWrite, len(jobs))
	var write pipeline
	var events dbsqlc.EventAppendBatchParams
	for i, j := range jobs {
		st := states[i]
		if skipLocked && st.Agreement.ID == uuid.Nil {
			j.alone = true // locked elsewhere (or unknown): judged alone, after a wait
			continue
		}
		if st.Holder != nil && st.Holder.AgreementID != st.Agreement.ID {
			st.Holder = nil // a token's owner never moves, but a caller's AgreementID may be wrong: refuse rather than write across agreements
		}
		w, err := decideSafely(j, st)
		if err != nil {
			j.err = err
			continue
		}
		if w.empty() {
			continue
		}
		if err := queueWrite(ctx, &write, &events, st.Agreement.ID, w); err != nil {
			j.err = err
			continue
		}
		writes[i] = w
	}
	if decided != nil {
		decided()
	}
	if len(events.Ids) > 0 {
		write.add(func(db dbsqlc.DBTX) error {
			return interpretError("append event", dbsqlc.New(db).EventAppendBatch(ctx, events))
		})
	}
	if len(write.steps) == 0 {
		return nil // nothing written: close rolls back, which costs what a commit would
	}
	write.exec("COMMIT")
	if err := tx.send(ctx, &write); err != nil {
		return err
	}
	// Committed: each room has a new version, and the observer hears what
	// an EventInsert or AgreementSetOutcome would have told it.
	for i, w := range writes {
		if w.empty() {
			continue
		}
		s.ann.changed(states[i].Agreement.ID)
		if s.obs != nil {
			if w.Event != nil {
				tell(s.obs, note{noteEvent, w.Event.Action})
			}
			if w.Outcome != nil && w.Outcome.Final() {
				tell(s.obs, note{noteOutcome, w.Outcome.Status})
			}
		}
	}
	return nil
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
