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

// AppendRequest names what an append locks and reads.
type AppendRequest struct {
	AgreementID uuid.UUID
	// ParticipantID is the participant appending: the roster carries its
	// token hash, and IdempotencyKey is looked up among its events.
	ParticipantID  uuid.UUID
	IdempotencyKey string
	// WithRevision reads the current revision too; a caller holding it in
	// a cache leaves it out.
	WithRevision bool
}

// AppendState is what an append read in one round trip, after taking the
// agreement's row lock: nothing in it can change before the transaction
// ends, and a revocation committed before the lock was granted is in it.
type AppendState struct {
	Agreement Agreement
	// Roster holds every participant with its counters; the appending one
	// comes with its token hash.
	Roster []RosterMember
	// Prior is the participant's event stored under the idempotency key,
	// nil if the key is new.
	Prior *Event
	// Revision is the current revision when the request asked for it.
	Revision *Revision
}

// Member returns the roster entry of participant id.
func (s *AppendState) Member(id uuid.UUID) (RosterMember, bool) {
	for _, m := range s.Roster {
		if m.ID == id {
			return m, true
		}
	}
	return RosterMember{}, false
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

// Append runs one append as a transaction of two round trips. The first
// sends BEGIN, locks the agreement (SELECT … FOR UPDATE) and, after the
// lock is granted, reads the roster with its counters, the idempotency key
// and, if asked, the current revision. decide judges that state (it must
// not have effects outside the transaction: a deadlock reruns it) and
// returns what to write; the second round trip writes it and commits. An
// error from decide rolls back and comes back unchanged. Store errors are
// interpreted; room.ErrNotFound means the agreement does not exist.
func (s *Store) Append(ctx context.Context, req AppendRequest, decide func(st *AppendState) (AppendWrite, error)) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = s.appendOnce(ctx, req, decide)
		if !retryable(err) {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
	}
	return err
}

func (s *Store) appendOnce(ctx context.Context, req AppendRequest, decide func(st *AppendState) (AppendWrite, error)) error {
	tx, err := s.beginPiped(ctx)
	if err != nil {
		return err
	}
	defer tx.close(ctx)

	st := &AppendState{}
	var read pipeline
	read.exec("BEGIN")
	read.add(func(db dbsqlc.DBTX) error {
		r, err := dbsqlc.New(db).AgreementGetForUpdate(ctx, req.AgreementID)
		if err != nil {
			return interpretError("lock agreement", err)
		}
		st.Agreement = agreementFrom(r)
		return nil
	})
	read.add(rosterStep(ctx, req.AgreementID, req.ParticipantID, &st.Roster))
	read.add(func(db dbsqlc.DBTX) error {
		r, err := dbsqlc.New(db).EventGetByKey(ctx, dbsqlc.EventGetByKeyParams{ParticipantID: req.ParticipantID, IdempotencyKey: req.IdempotencyKey})
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return interpretError("get event by key", err)
		}
		e := eventFrom(r)
		st.Prior = &e
		return nil
	})
	if req.WithRevision {
		read.add(revisionStep(ctx, req.AgreementID, &st.Revision))
	}
	if err := tx.send(ctx, &read); err != nil {
		return err
	}
	w, err := decide(st)
	if err != nil {
		return err
	}
	if w.Event == nil && w.Outcome == nil {
		return nil // nothing written: close rolls back, which costs what a commit would
	}
	var write pipeline
	if err := queueWrite(ctx, &write, st.Agreement.ID, w); err != nil {
		return err
	}
	write.exec("COMMIT")
	return tx.send(ctx, &write)
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
	p.add(func(db dbsqlc.DBTX) error {
		return interpretError("insert event", dbsqlc.New(db).EventInsert(ctx, eventParams(e)))
	})
	if room.IsTerminal(e.Action) {
		p.add(func(db dbsqlc.DBTX) error {
			return interpretError("record decision", dbsqlc.New(db).ParticipantDecide(ctx, dbsqlc.ParticipantDecideParams{
				ID: e.ParticipantID, EventsRevision: int32(e.Revision), Decision: &e.Action,
				DecisionEventID: uuid.NullUUID{UUID: e.ID, Valid: true}, DecisionSeq: &e.Seq, DecidedAt: &e.CreatedAt,
			}))
		})
	} else {
		p.add(func(db dbsqlc.DBTX) error {
			return interpretError("count event", dbsqlc.New(db).ParticipantCountEvent(ctx, dbsqlc.ParticipantCountEventParams{ID: e.ParticipantID, EventsRevision: int32(e.Revision)}))
		})
	}
	p.add(func(db dbsqlc.DBTX) error {
		return interpretError("advance agreement", dbsqlc.New(db).AgreementAppend(ctx, dbsqlc.AgreementAppendParams{
			ID: id, HeadSeq: e.Seq, HeadHash: e.Hash, OutcomeStatus: status, OutcomeDecidedAt: decidedAt, OutcomeEventID: eventID,
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
