package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// Event is one stored room event, a link of its agreement's hash chain.
type Event struct {
	ID             uuid.UUID
	AgreementID    uuid.UUID
	Seq            int64
	ParticipantID  uuid.UUID
	Revision       int
	Action         string
	Body           string
	IdempotencyKey string
	// CommandDigest is the digest of the room-command/v1 object the event
	// was posted as; a replay with the same key must match it.
	CommandDigest string
	CreatedAt     time.Time
	PrevHash      string
	Hash          string
}

// RoomEvent is the event as the decision rule sees it.
func (e Event) RoomEvent() room.Event {
	return room.Event{ID: e.ID.String(), Seq: e.Seq, ParticipantID: e.ParticipantID.String(), Revision: e.Revision, Action: e.Action, CreatedAt: e.CreatedAt}
}

// ChainHead is the last link of an agreement's event chain. An empty chain
// has Seq 0 and canon.ZeroHash, so the first event links to it like any other.
type ChainHead struct {
	Seq  int64
	Hash string
}

func eventFrom(r dbsqlc.Event) Event {
	return Event{
		ID: r.ID, AgreementID: r.AgreementID, Seq: r.Seq, ParticipantID: r.ParticipantID, Revision: int(r.Revision),
		Action: r.Action, Body: r.Body, IdempotencyKey: r.IdempotencyKey, CommandDigest: r.CommandDigest,
		CreatedAt: r.CreatedAt, PrevHash: r.PrevHash, Hash: r.Hash,
	}
}

// EventInsert appends e. A taken sequence number or a participant's reused
// idempotency key is room.ErrConflict.
func (q queries) EventInsert(ctx context.Context, e Event) error {
	err := q.q.EventInsert(ctx, dbsqlc.EventInsertParams{
		ID: e.ID, AgreementID: e.AgreementID, Seq: e.Seq, ParticipantID: e.ParticipantID, Revision: int32(e.Revision),
		Action: e.Action, Body: e.Body, IdempotencyKey: e.IdempotencyKey, CommandDigest: e.CommandDigest,
		CreatedAt: e.CreatedAt, PrevHash: e.PrevHash, Hash: e.Hash,
	})
	if err == nil {
		q.note(noteEvent, e.Action)
	}
	return interpretError("insert event", err)
}

// EventGetByKey reads the event a participant posted with an idempotency
// key, or room.ErrNotFound.
func (q queries) EventGetByKey(ctx context.Context, participantID uuid.UUID, key string) (Event, error) {
	r, err := q.q.EventGetByKey(ctx, dbsqlc.EventGetByKeyParams{ParticipantID: participantID, IdempotencyKey: key})
	if err != nil {
		return Event{}, interpretError("get event by key", err)
	}
	return eventFrom(r), nil
}

// EventListByAgreement returns an agreement's whole chain in sequence order.
func (q queries) EventListByAgreement(ctx context.Context, agreementID uuid.UUID) ([]Event, error) {
	rows, err := q.q.EventListByAgreement(ctx, agreementID)
	if err != nil {
		return nil, interpretError("list events", err)
	}
	return convert(rows, eventFrom), nil
}

// EventListTerminal returns the terminal events (agree, disagree, abstain)
// of one revision in sequence order.
func (q queries) EventListTerminal(ctx context.Context, agreementID uuid.UUID, revision int) ([]Event, error) {
	rows, err := q.q.EventListTerminal(ctx, dbsqlc.EventListTerminalParams{AgreementID: agreementID, Revision: int32(revision)})
	if err != nil {
		return nil, interpretError("list terminal events", err)
	}
	return convert(rows, eventFrom), nil
}

// EventCountByParticipant counts a participant's events on one revision.
func (q queries) EventCountByParticipant(ctx context.Context, participantID uuid.UUID, revision int) (int, error) {
	n, err := q.q.EventCountByParticipant(ctx, dbsqlc.EventCountByParticipantParams{ParticipantID: participantID, Revision: int32(revision)})
	if err != nil {
		return 0, interpretError("count events", err)
	}
	return int(n), nil
}

// EventChainHead returns the last link of an agreement's chain; see
// ChainHead for an empty one.
func (q queries) EventChainHead(ctx context.Context, agreementID uuid.UUID) (ChainHead, error) {
	r, err := q.q.EventChainHead(ctx, agreementID)
	err = interpretError("get chain head", err)
	switch {
	case err == nil:
		return ChainHead{Seq: r.Seq, Hash: r.Hash}, nil
	case errors.Is(err, room.ErrNotFound):
		return ChainHead{Hash: canon.ZeroHash}, nil
	default:
		return ChainHead{}, err
	}
}

// AppendState is what appending an event to an agreement needs to know,
// read while the transaction holds the agreement's lock.
type AppendState struct {
	// Revision is the agreement's current revision.
	Revision Revision
	Roster   []Participant
	// Terminal holds the terminal events of the current revision.
	Terminal []Event
	// ParticipantEvents counts the appending participant's events on the
	// current revision.
	ParticipantEvents int
	Head              ChainHead
}

// EventAppendState reads what appending an event by participantID to a
// needs, after AgreementLock(a.ID) in the same transaction, so nothing it
// read can change before the event is stored.
func (tx *Tx) EventAppendState(ctx context.Context, a Agreement, participantID uuid.UUID) (AppendState, error) {
	var s AppendState
	var err error
	if s.Revision, err = tx.RevisionGet(ctx, a.ID, a.CurrentRevision); err != nil {
		return AppendState{}, err
	}
	if s.Roster, err = tx.ParticipantListByAgreement(ctx, a.ID); err != nil {
		return AppendState{}, err
	}
	if s.Terminal, err = tx.EventListTerminal(ctx, a.ID, a.CurrentRevision); err != nil {
		return AppendState{}, err
	}
	if s.ParticipantEvents, err = tx.EventCountByParticipant(ctx, participantID, a.CurrentRevision); err != nil {
		return AppendState{}, err
	}
	if s.Head, err = tx.EventChainHead(ctx, a.ID); err != nil {
		return AppendState{}, err
	}
	return s, nil
}
