package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// The statements a new revision runs, in the transaction
// that holds the agreement's lock.

// AgreementAmend makes revision number current with deadline and bumps the
// agreement's version, with the webhook deliveries of the new revision, and
// reports whether it did: false means the outcome is no longer pending.
func (tx *Tx) AgreementAmend(ctx context.Context, id uuid.UUID, number int, deadline time.Time) (bool, error) {
	n, err := tx.q.AgreementAmend(ctx, dbsqlc.AgreementAmendParams{ID: id, CurrentRevision: int32(number), Deadline: deadline})
	if err != nil {
		return false, interpretError("amend agreement", err)
	}
	if n == 0 {
		return false, nil
	}
	tx.roomChanged(id)
	return true, queueWebhooks(ctx, tx.tx, id, hookRevision)
}

// InvitationSetExpiry moves the expiry of every invitation of an agreement
// to at (the new deadline).
func (q queries) InvitationSetExpiry(ctx context.Context, agreementID uuid.UUID, at time.Time) error {
	err := q.q.InvitationSetExpiryByAgreement(ctx, dbsqlc.InvitationSetExpiryByAgreementParams{AgreementID: agreementID, ExpiresAt: at})
	return interpretError("set invitation expiry", err)
}

// EventTerminalList returns every terminal decision of an agreement, on any
// revision, in sequence order, as the decision rule sees it.
func (q queries) EventTerminalList(ctx context.Context, agreementID uuid.UUID) ([]room.Event, error) {
	rows, err := q.q.EventTerminalListByAgreement(ctx, agreementID)
	if err != nil {
		return nil, interpretError("list decisions", err)
	}
	return convert(rows, func(r dbsqlc.EventTerminalListByAgreementRow) room.Event {
		return room.Event{ID: r.ID.String(), Seq: r.Seq, ParticipantID: r.ParticipantID.String(), Revision: int(r.Revision), Action: r.Action, CreatedAt: r.CreatedAt, Evidence: r.Evidence}
	}), nil
}

// ParticipantSetDecision stores d, with its evidence, as the participant's
// standing decision (nil: none) and whether it counts on the current
// revision, which makes the participant's state decided, else claimed or
// invited.
func (q queries) ParticipantSetDecision(ctx context.Context, id uuid.UUID, d *room.Event, counts bool) error {
	p := dbsqlc.ParticipantSetDecisionParams{ID: id, Counts: counts && d != nil}
	if d != nil {
		eventID, err := uuid.Parse(d.ID)
		if err != nil {
			return fmt.Errorf("store: set decision: event id: %w", err)
		}
		rev := int32(d.Revision)
		p.Decision, p.DecisionEventID, p.DecisionSeq, p.DecisionRevision, p.DecidedAt = &d.Action, uuid.NullUUID{UUID: eventID, Valid: true}, &d.Seq, &rev, &d.CreatedAt
		if d.Evidence != "" {
			p.DecisionEvidence = &d.Evidence
		}
	}
	return interpretError("set decision", q.q.ParticipantSetDecision(ctx, p))
}
