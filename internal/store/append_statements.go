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

// The statements of an append transaction (Append, AppendMany). Its common
// work takes one statement for all its appends, however many: the locks,
// the holders, the events.
// Only what some appends need (a roster, a revision, an outcome without an
// event, an artifact) takes a statement of its own.

// queueReads queues what the items read, in order: their agreements' locks,
// then (each statement seeing the locks granted) their holders and what
// each asked for besides. states[i] receives items[i]'s.
func queueReads(ctx context.Context, read *pipeline, items []*AppendItem, skipLocked bool, states []*AppendState) {
	if skipLocked {
		queueLockAll(ctx, read, items, states)
	} else {
		for i, it := range items {
			queueLock(ctx, read, it.Request, states[i])
		}
	}
	queueHolders(ctx, read, items, states)
	for i, it := range items {
		queueExtras(ctx, read, it.Request, states[i])
	}
}

// queueLockAll locks every item's agreement that no other transaction
// holds; an item whose agreement is held (or unknown) keeps a zero Agreement.
func queueLockAll(ctx context.Context, read *pipeline, items []*AppendItem, states []*AppendState) {
	ids := make([]uuid.UUID, len(items))
	for i, it := range items {
		ids[i] = it.Request.AgreementID
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

// queueHolders reads every item's token holder, and the event it stored
// under the item's idempotency key: an unknown token leaves Holder nil, a
// new key Prior.
func queueHolders(ctx context.Context, read *pipeline, items []*AppendItem, states []*AppendState) {
	tokens, keys := make([][]byte, len(items)), make([]string, len(items))
	for i, it := range items {
		tokens[i], keys[i] = it.Request.TokenHash, it.Request.IdempotencyKey
	}
	// at is the item of a row's n (from 1), or an error for an n no item has.
	at := func(n int32) (*AppendState, error) {
		if n < 1 || int(n) > len(states) {
			return nil, errors.New("store: a row names no append of the transaction")
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
// the roster, unless skipped, the event holding its signature, if it has
// one, and the current revision, if asked.
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
	if req.Signature != nil {
		read.add(func(db dbsqlc.DBTX) error {
			ids, err := dbsqlc.New(db).EventBySignature(ctx, dbsqlc.EventBySignatureParams{TokenHash: req.TokenHash, Signature: req.Signature})
			if err != nil {
				return interpretError("event by signature", err)
			}
			if len(ids) > 0 {
				st.SignatureEvent = &ids[0]
			}
			return nil
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
			RuleMember: RuleMember{ID: r.ID, Required: r.Required, Decision: decisionFrom(r.Decision, r.DecisionEventID, r.DecisionSeq, r.DecisionRevision, r.DecidedAt, r.DecisionEvidence)},
			Kind:       r.Kind, RevokedAt: r.RevokedAt, EventsRevision: int(r.EventsRevision), EventCount: int(r.EventCount)},
		AgreementID: r.AgreementID, InvitationID: r.InvitationID, TokenHash: r.TokenHash, PublicKey: r.PublicKey,
	}
}

// queueWrite adds w on agreement id to the transaction: its event to
// events (one EventAppendBatch for all its appends), an outcome without an event and an
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
	p.AddressedTos = append(p.AddressedTos, uuidArrayLiteral(e.To))
	p.InReplyTos = append(p.InReplyTos, e.InReplyTo.UUID)
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

// uuidArrayLiteral is ids as a PostgreSQL array literal, "" for none.
func uuidArrayLiteral(ids []uuid.UUID) string {
	if len(ids) == 0 {
		return ""
	}
	b := make([]byte, 0, 2+37*len(ids))
	b = append(b, '{')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, id.String()...)
	}
	return string(append(b, '}'))
}
