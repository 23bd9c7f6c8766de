package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// The statements of appendBatch. Its common work takes one statement for
// the whole batch, whatever its size: the locks, the holders, the events.
// Only what some appends need (a roster, a revision, an outcome without an
// event, an artifact) takes a statement of its own.

// queueReads queues what the jobs read, in order: their agreements' locks,
// then (each statement seeing the locks granted) their holders and what
// each asked for besides. states[i] receives jobs[i]'s.
func queueReads(ctx context.Context, read *pipeline, jobs []*appendJob, skipLocked bool, states []*AppendState) {
	if skipLocked {
		queueBatchLock(ctx, read, jobs, states)
	} else {
		for i, j := range jobs {
			queueLock(ctx, read, j.req, states[i])
		}
	}
	queueHolders(ctx, read, jobs, states)
	for i, j := range jobs {
		queueExtras(ctx, read, j.req, states[i])
	}
}

// queueBatchLock locks every job's agreement that no other transaction
// holds; a job whose agreement is held (or unknown) keeps a zero Agreement.
func queueBatchLock(ctx context.Context, read *pipeline, jobs []*appendJob, states []*AppendState) {
	ids := make([]uuid.UUID, len(jobs))
	for i, j := range jobs {
		ids[i] = j.req.AgreementID
	}
	read.add(func(db dbsqlc.DBTX) error {
		rows, err := dbsqlc.New(db).AgreementLockBatch(ctx, ids)
		if err != nil {
			return interpretError("lock agreements", err)
		}
		for _, r := range rows {
			for i, id := range ids {
				if id == r.ID {
					states[i].Agreement = agreementFrom(r)
				}
			}
		}
		return nil
	})
}

// queueLock locks the agreement of one append, waiting for it: by id when
// the request names it, else through the token's owner.
func queueLock(ctx context.Context, read *pipeline, req AppendRequest, st *AppendState) {
	read.add(func(db dbsqlc.DBTX) error {
		var r dbsqlc.Agreement
		var err error
		if req.AgreementID != uuid.Nil {
			r, err = dbsqlc.New(db).AgreementGetForUpdate(ctx, req.AgreementID)
		} else {
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
}

// queueHolders reads every job's token holder, and the event it stored
// under the job's idempotency key: an unknown token leaves Holder nil, a
// new key Prior.
func queueHolders(ctx context.Context, read *pipeline, jobs []*appendJob, states []*AppendState) {
	tokens, keys := make([][]byte, len(jobs)), make([]string, len(jobs))
	for i, j := range jobs {
		tokens[i], keys[i] = j.req.TokenHash, j.req.IdempotencyKey
	}
	// at is the job of a row's n (from 1), or an error for an n no job has.
	at := func(n int32) (*AppendState, error) {
		if n < 1 || int(n) > len(states) {
			return nil, errors.New("store: a row names no append of the batch")
		}
		return states[n-1], nil
	}
	read.add(func(db dbsqlc.DBTX) error {
		rows, err := dbsqlc.New(db).ParticipantHolders(ctx, tokens)
		if err != nil {
			return interpretError("get participants by token", err)
		}
		for _, r := range rows {
			st, err := at(r.N)
			if err != nil {
				return err
			}
			st.Holder = holderFrom(r)
		}
		return nil
	})
	read.add(func(db dbsqlc.DBTX) error {
		rows, err := dbsqlc.New(db).EventPriorsByToken(ctx, dbsqlc.EventPriorsByTokenParams{TokenHashes: tokens, IdempotencyKeys: keys})
		if err != nil {
			return interpretError("get events by key", err)
		}
		for _, r := range rows {
			st, err := at(r.N)
			if err != nil {
				return err
			}
			prior := eventFrom(r.Event)
			st.Prior = &prior
		}
		return nil
	})
}

// queueExtras queues the reads one append asked for besides its holder:
// the roster, unless skipped, and the current revision, if asked.
func queueExtras(ctx context.Context, read *pipeline, req AppendRequest, st *AppendState) {
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

// holderFrom is the token holder of a row.
func holderFrom(r dbsqlc.ParticipantHoldersRow) *TokenHolder {
	return &TokenHolder{
		RosterMember: RosterMember{
			RuleMember: RuleMember{ID: r.ID, Required: r.Required, Decision: decisionFrom(r.Decision, r.DecisionEventID, r.DecisionSeq, r.DecisionRevision, r.DecidedAt)},
			Kind:       r.Kind, RevokedAt: r.RevokedAt, EventsRevision: int(r.EventsRevision), EventCount: int(r.EventCount)},
		AgreementID: r.AgreementID, InvitationID: r.InvitationID, TokenHash: r.TokenHash, PublicKey: r.PublicKey,
	}
}

// queueWrite adds w on agreement id to the batch: its event to events (one
// EventAppendBatch for the whole batch), an outcome without an event and an
// artifact as statements of their own on p.
func queueWrite(ctx context.Context, p *pipeline, events *dbsqlc.EventAppendBatchParams, id uuid.UUID, w AppendWrite) error {
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
	if status != nil && *status == "" {
		return errors.New("store: append: an outcome without a status")
	}
	addEvent(events, e, status, decidedAt, eventID)
	if w.Reply != nil {
		queueReply(ctx, p, *w.Reply)
	}
	if a := w.Artifact; a != nil {
		p.add(func(db dbsqlc.DBTX) error {
			return interpretError("insert artifact", dbsqlc.New(db).ArtifactInsert(ctx, dbsqlc.ArtifactInsertParams{
				AgreementID: a.AgreementID, Revision: int32(a.Revision), Body: a.Body, Sha256: a.SHA256, FinalizedAt: a.FinalizedAt,
			}))
		})
	}
	return nil
}

// addEvent appends e, and the outcome it sets if status is not nil, to the
// parallel arrays of p. No outcome is an empty status and a nil event id.
func addEvent(p *dbsqlc.EventAppendBatchParams, e Event, status *string, decidedAt *time.Time, outcomeEvent uuid.NullUUID) {
	p.Ids = append(p.Ids, e.ID)
	p.AgreementIds = append(p.AgreementIds, e.AgreementID)
	p.Seqs = append(p.Seqs, e.Seq)
	p.ParticipantIds = append(p.ParticipantIds, e.ParticipantID)
	p.Revisions = append(p.Revisions, int32(e.Revision))
	p.Actions = append(p.Actions, e.Action)
	p.Bodies = append(p.Bodies, e.Body)
	p.IdempotencyKeys = append(p.IdempotencyKeys, e.IdempotencyKey)
	p.CommandDigests = append(p.CommandDigests, e.CommandDigest)
	p.CreatedAts = append(p.CreatedAts, e.CreatedAt)
	p.PrevHashes = append(p.PrevHashes, e.PrevHash)
	p.Hashes = append(p.Hashes, e.Hash)
	p.Signatures = append(p.Signatures, e.Signature)
	p.Evidences = append(p.Evidences, e.Evidence)
	p.Terminals = append(p.Terminals, room.IsTerminal(e.Action))
	var st string
	var at time.Time
	if status != nil {
		st = *status
		if decidedAt != nil {
			at = *decidedAt
		}
	}
	p.OutcomeStatuses = append(p.OutcomeStatuses, st)
	p.OutcomeDecidedAts = append(p.OutcomeDecidedAts, at)
	p.OutcomeEventIds = append(p.OutcomeEventIds, outcomeEvent.UUID)
}
