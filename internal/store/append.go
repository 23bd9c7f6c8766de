package store

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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
		j = &appendJob{req: req, decide: decide}
	}
	if err := s.appendBatch(ctx, []*appendJob{j}, false); err != nil {
		return err
	}
	return j.err
}

// appendBatch runs jobs, for distinct agreements, in one transaction: the
// error is the batch's (nothing committed); each job's own refusal is in
// its err. With skipLocked (the appender's batches) a job whose agreement
// another transaction has locked is not waited for: it is left out, marked
// alone, so one held lock never stalls the appends of other agreements.
func (s *Store) appendBatch(ctx context.Context, jobs []*appendJob, skipLocked bool) error {
	// Locks in agreement order: batches never wait for each other in a cycle.
	slices.SortFunc(jobs, func(a, b *appendJob) int { return bytes.Compare(a.req.AgreementID[:], b.req.AgreementID[:]) })
	tx, err := s.beginPiped(ctx)
	if err != nil {
		return err
	}
	defer tx.close(ctx)

	states := make([]*AppendState, len(jobs))
	var read pipeline
	read.exec("BEGIN")
	for i, j := range jobs {
		states[i] = &AppendState{}
		queueRead(ctx, &read, j.req, skipLocked, states[i])
	}
	if err := tx.send(ctx, &read); err != nil {
		return err
	}
	writes := make([]AppendWrite, len(jobs))
	var write pipeline
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
		if err := queueWrite(ctx, &write, st.Agreement.ID, w); err != nil {
			j.err = err
			continue
		}
		writes[i] = w
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

// queueRead queues what one append reads, its lock first, into st.
func queueRead(ctx context.Context, read *pipeline, req AppendRequest, skipLocked bool, st *AppendState) {
	read.add(func(db dbsqlc.DBTX) error {
		var r dbsqlc.Agreement
		var err error
		switch {
		case req.AgreementID != uuid.Nil && skipLocked:
			r, err = dbsqlc.New(db).AgreementGetForUpdateSkipLocked(ctx, req.AgreementID)
		case req.AgreementID != uuid.Nil:
			r, err = dbsqlc.New(db).AgreementGetForUpdate(ctx, req.AgreementID)
		default:
			r, err = dbsqlc.New(db).AgreementLockByToken(ctx, req.TokenHash)
		}
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil // an unknown token: the holder is nil too
		case err != nil:
			return interpretError("lock agreement", err)
		}
		st.Agreement = agreementFrom(r)
		return nil
	})
	read.add(func(db dbsqlc.DBTX) error {
		r, err := dbsqlc.New(db).ParticipantHolder(ctx, dbsqlc.ParticipantHolderParams{TokenHash: req.TokenHash, IdempotencyKey: req.IdempotencyKey})
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return interpretError("get participant by token", err)
		}
		st.Holder, st.Prior = holderFrom(r, req.IdempotencyKey)
		return nil
	})
	if !req.SkipRoster {
		read.add(func(db dbsqlc.DBTX) error {
			r, err := dbsqlc.New(db).ParticipantRule(ctx, req.TokenHash)
			if err != nil {
				return interpretError("roster", err)
			}
			st.Roster, err = ruleMembersFrom(r)
			return err
		})
	}
	if req.WithRevision {
		read.add(func(db dbsqlc.DBTX) error {
			r, err := dbsqlc.New(db).RevisionGetCurrentByToken(ctx, req.TokenHash)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				return nil
			case err != nil:
				return interpretError("get current revision", err)
			}
			rev := revisionFrom(r)
			st.Revision = &rev
			return nil
		})
		read.add(historyByTokenStep(ctx, req.TokenHash, &st.Revision))
	}
}

// holderFrom splits the holder row into the holder and the event it posted
// under the idempotency key, nil if none.
func holderFrom(r dbsqlc.ParticipantHolderRow, key string) (*TokenHolder, *Event) {
	h := &TokenHolder{
		RosterMember: RosterMember{
			RuleMember: RuleMember{ID: r.ID, Required: r.Required, Decision: decisionFrom(r.Decision, r.DecisionEventID, r.DecisionSeq, r.DecisionRevision, r.DecidedAt)},
			Kind:       r.Kind, RevokedAt: r.RevokedAt, EventsRevision: int(r.EventsRevision), EventCount: int(r.EventCount)},
		AgreementID: r.AgreementID, InvitationID: r.InvitationID, TokenHash: r.TokenHash, PublicKey: r.PublicKey,
	}
	if !r.PriorID.Valid || r.PriorSeq == nil || r.PriorRevision == nil || r.PriorAction == nil || r.PriorBody == nil ||
		r.PriorCommandDigest == nil || r.PriorCreatedAt == nil || r.PriorPrevHash == nil || r.PriorHash == nil {
		return h, nil
	}
	return h, &Event{
		ID: r.PriorID.UUID, AgreementID: r.AgreementID, Seq: *r.PriorSeq, ParticipantID: r.ID, Revision: int(*r.PriorRevision),
		Action: *r.PriorAction, Body: *r.PriorBody, IdempotencyKey: key, CommandDigest: *r.PriorCommandDigest, CreatedAt: *r.PriorCreatedAt,
		PrevHash: *r.PriorPrevHash, Hash: *r.PriorHash, Signature: r.PriorSignature,
	}
}

// queueWrite queues the statements of w on agreement id.
func queueWrite(ctx context.Context, p *pipeline, id uuid.UUID, w AppendWrite) error {
	var eventID uuid.NullUUID
	var status *string
	var decidedAt *time.Time
	if w.Outcome != nil {
		var err error
		if eventID, err = decidingEvent(*w.Outcome); err != nil {
			return err
		}
		status, decidedAt = &w.Outcome.Status, &w.Outcome.DecidedAt
	}
	if w.Event == nil {
		p.add(func(db dbsqlc.DBTX) error {
			_, err := dbsqlc.New(db).AgreementSetOutcome(ctx, dbsqlc.AgreementSetOutcomeParams{ID: id, OutcomeStatus: *status, OutcomeDecidedAt: decidedAt, OutcomeEventID: eventID})
			return interpretError("set outcome", err)
		})
		return nil
	}
	e := *w.Event
	if e.AgreementID != id {
		return errors.New("store: append: the event names another agreement than the one locked")
	}
	p.add(func(db dbsqlc.DBTX) error {
		return interpretError("append event", dbsqlc.New(db).EventAppend(ctx, dbsqlc.EventAppendParams{
			ID: e.ID, AgreementID: e.AgreementID, Seq: e.Seq, ParticipantID: e.ParticipantID, Revision: int32(e.Revision),
			Action: e.Action, Body: e.Body, IdempotencyKey: e.IdempotencyKey, CommandDigest: e.CommandDigest,
			CreatedAt: e.CreatedAt, PrevHash: e.PrevHash, Hash: e.Hash, Signature: e.Signature, Terminal: room.IsTerminal(e.Action),
			OutcomeStatus: status, OutcomeDecidedAt: decidedAt, OutcomeEventID: eventID,
		}))
	})
	if a := w.Artifact; a != nil {
		p.add(func(db dbsqlc.DBTX) error {
			return interpretError("insert artifact", dbsqlc.New(db).ArtifactInsert(ctx, dbsqlc.ArtifactInsertParams{
				AgreementID: a.AgreementID, Revision: int32(a.Revision), Body: a.Body, Sha256: a.SHA256, FinalizedAt: a.FinalizedAt,
			}))
		})
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
