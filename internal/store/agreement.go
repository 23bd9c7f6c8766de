package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// Agreement is one agreement with the outcome stored for it.
type Agreement struct {
	ID              uuid.UUID
	WorkspaceID     uuid.UUID
	CurrentRevision int
	Deadline        time.Time
	// Outcome is pending until an event or an expiry decided it; the stored
	// outcome never changes after that.
	Outcome   room.Outcome
	CreatedAt time.Time
	// Version changes in the transaction of every event, outcome change,
	// revision, claim and revocation: equal versions mean an equal room.
	Version int64
	// Head is the last link of the event chain.
	Head ChainHead
	// Webhooks reports that an endpoint was ever registered in the
	// agreement: only then does a change queue webhook deliveries.
	Webhooks bool
	// Reminders are when a required participant who has not decided is
	// reminded, as durations before the deadline, latest first.
	Reminders []time.Duration
}

// AgreementKey is an agreement's position in the newest-first list: the
// keyset cursor of AgreementList.
type AgreementKey struct {
	CreatedAt time.Time
	ID        uuid.UUID
}

// ListedAgreement is an agreement with the canonical agreement/v1 bytes of
// its current revision, from which a list shows the title.
type ListedAgreement struct {
	Agreement
	Canonical []byte
}

func agreementFrom(r dbsqlc.Agreement) Agreement {
	o := room.Outcome{Status: r.OutcomeStatus}
	if r.OutcomeDecidedAt != nil {
		o.DecidedAt = *r.OutcomeDecidedAt
	}
	if r.OutcomeEventID.Valid {
		o.DecidingEventID = r.OutcomeEventID.UUID.String()
	}
	return Agreement{ID: r.ID, WorkspaceID: r.WorkspaceID, CurrentRevision: int(r.CurrentRevision), Deadline: r.Deadline, Outcome: o, CreatedAt: r.CreatedAt,
		Version: r.Version, Head: ChainHead{Seq: r.HeadSeq, Hash: r.HeadHash}, Webhooks: r.WebhooksRegistered, Reminders: seconds(r.Reminders)}
}

// secondsOf are durations in whole seconds, as the reminders are stored.
func secondsOf(ds []time.Duration) []int32 {
	out := make([]int32, len(ds))
	for i, d := range ds {
		out[i] = int32(d / time.Second)
	}
	return out
}

// remindFrom is when reminders before deadline begin, the first of them
// being the latest; nil for none.
func remindFrom(deadline time.Time, before []time.Duration) *time.Time {
	if len(before) == 0 {
		return nil
	}
	t := deadline.Add(-before[0])
	return &t
}

// seconds are whole seconds as durations.
func seconds(secs []int32) []time.Duration {
	out := make([]time.Duration, len(secs))
	for i, s := range secs {
		out[i] = time.Duration(s) * time.Second
	}
	return out
}

// AgreementInsert stores a new agreement at revision 1 with a pending
// outcome and room.DefaultReminders (AgreementSetReminders changes them).
// An existing id is room.ErrConflict. The new room is announced like a
// changed one once committed: its workspace's lists change.
func (q queries) AgreementInsert(ctx context.Context, id uuid.UUID, deadline, createdAt time.Time) error {
	err := q.q.AgreementInsert(ctx, dbsqlc.AgreementInsertParams{ID: id, Deadline: deadline, CreatedAt: createdAt,
		Reminders: secondsOf(room.DefaultReminders), RemindFrom: remindFrom(deadline, room.DefaultReminders)})
	if err == nil {
		q.roomChanged(id)
	}
	return interpretError("insert agreement", err)
}

// AgreementGet reads one agreement without locking it, or room.ErrNotFound.
func (q queries) AgreementGet(ctx context.Context, id uuid.UUID) (Agreement, error) {
	r, err := q.q.AgreementGet(ctx, id)
	if err != nil {
		return Agreement{}, interpretError("get agreement", err)
	}
	return agreementFrom(r), nil
}

// AgreementLock reads one agreement and locks its row until the transaction
// ends: every write to one agreement (an event, a claim's outcome, a resend)
// takes this lock first, which serializes them across replicas. Returns
// room.ErrNotFound.
func (tx *Tx) AgreementLock(ctx context.Context, id uuid.UUID) (Agreement, error) {
	r, err := tx.q.AgreementGetForUpdate(ctx, id)
	if err != nil {
		return Agreement{}, interpretError("lock agreement", err)
	}
	return agreementFrom(r), nil
}

// AgreementLockByParticipant locks the agreement of a participant, as
// AgreementLock does, and returns it; room.ErrNotFound if the participant
// does not exist.
func (tx *Tx) AgreementLockByParticipant(ctx context.Context, participantID uuid.UUID) (Agreement, error) {
	r, err := tx.q.AgreementLockByParticipant(ctx, participantID)
	if err != nil {
		return Agreement{}, interpretError("lock agreement of participant", err)
	}
	return agreementFrom(r), nil
}

// AgreementBump records a change the room shows that is neither an event
// nor an outcome (a claim, a revocation) as a new version of the room.
func (tx *Tx) AgreementBump(ctx context.Context, id uuid.UUID) error {
	if err := tx.q.AgreementBump(ctx, id); err != nil {
		return interpretError("bump agreement version", err)
	}
	tx.roomChanged(id)
	return nil
}

// AgreementList returns up to limit agreements, newest first, starting after
// before (nil: from the newest).
func (q queries) AgreementList(ctx context.Context, limit int, before *AgreementKey) ([]ListedAgreement, error) {
	p := dbsqlc.AgreementListParams{Limit: int32(limit)}
	if before != nil {
		p.BeforeCreated, p.BeforeID = &before.CreatedAt, uuid.NullUUID{UUID: before.ID, Valid: true}
	}
	rows, err := q.q.AgreementList(ctx, p)
	if err != nil {
		return nil, interpretError("list agreements", err)
	}
	out := make([]ListedAgreement, len(rows))
	for i, r := range rows {
		out[i] = ListedAgreement{
			Agreement: agreementFrom(dbsqlc.Agreement{ID: r.ID, CurrentRevision: r.CurrentRevision, Deadline: r.Deadline,
				OutcomeStatus: r.OutcomeStatus, OutcomeDecidedAt: r.OutcomeDecidedAt, OutcomeEventID: r.OutcomeEventID, CreatedAt: r.CreatedAt,
				Version: r.Version, HeadSeq: r.HeadSeq, HeadHash: r.HeadHash, WorkspaceID: r.WorkspaceID}),
			Canonical: []byte(r.CanonicalJson),
		}
	}
	return out, nil
}

// AgreementExpireDue settles as expired every agreement still pending at
// its deadline, which is before now, and returns their ids; each is a new
// version of its room, announced like any other, and has the webhook
// deliveries and the emails of its outcome, in one transaction.
func (s *Store) AgreementExpireDue(ctx context.Context, now time.Time) ([]uuid.UUID, error) {
	var ids []uuid.UUID
	err := s.InTx(ctx, func(tx *Tx) error {
		rows, err := tx.q.AgreementExpireDue(ctx, now)
		if err != nil {
			return interpretError("expire due agreements", err)
		}
		ids = make([]uuid.UUID, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
			tx.note(noteOutcome, room.StatusExpired)
			tx.roomChanged(r.ID)
			if r.WebhooksRegistered {
				if err := queueWebhooks(ctx, tx.tx, r.ID, hookOutcome); err != nil {
					return err
				}
			}
			if err := queueOutcome(ctx, tx.tx, r.ID, now); err != nil {
				return err
			}
		}
		return nil
	})
	return ids, err
}

// AgreementSetOutcome stores o as the agreement's outcome if the stored one
// is still pending (the first terminal fact wins), as a new version with
// the webhook deliveries and emails of its outcome, and reports whether it
// did.
// o.DecidingEventID is empty for an expiry.
func (tx *Tx) AgreementSetOutcome(ctx context.Context, id uuid.UUID, o room.Outcome) (bool, error) {
	eventID, err := decidingEvent(o)
	if err != nil {
		return false, err
	}
	n, err := tx.q.AgreementSetOutcome(ctx, dbsqlc.AgreementSetOutcomeParams{ID: id, OutcomeStatus: o.Status, OutcomeDecidedAt: &o.DecidedAt, OutcomeEventID: eventID})
	if err != nil {
		return false, interpretError("set outcome", err)
	}
	if n == 0 {
		return false, nil
	}
	tx.note(noteOutcome, o.Status)
	tx.roomChanged(id)
	if err := queueWebhooks(ctx, tx.tx, id, hookOutcome); err != nil {
		return false, err
	}
	return true, queueOutcome(ctx, tx.tx, id, o.DecidedAt)
}

// AgreementSetOutcome is Tx.AgreementSetOutcome in a transaction of its own.
func (s *Store) AgreementSetOutcome(ctx context.Context, id uuid.UUID, o room.Outcome) (set bool, err error) {
	err = s.InTx(ctx, func(tx *Tx) error {
		set, err = tx.AgreementSetOutcome(ctx, id, o)
		return err
	})
	return set, err
}

// decidingEvent parses an outcome's deciding event id; an expiry has none.
func decidingEvent(o room.Outcome) (uuid.NullUUID, error) {
	if o.DecidingEventID == "" {
		return uuid.NullUUID{}, nil
	}
	id, err := uuid.Parse(o.DecidingEventID)
	if err != nil {
		return uuid.NullUUID{}, fmt.Errorf("store: set outcome: deciding event id: %w", err)
	}
	return uuid.NullUUID{UUID: id, Valid: true}, nil
}
