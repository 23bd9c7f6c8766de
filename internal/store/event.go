package store

import (
	"context"
	"time"

	"github.com/google/uuid"

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
	// CommandDigest is the digest of the room-command object the event was
	// posted as (version 2, holding IdempotencyKey, for a signed event
	// stored since that version; version 1 otherwise); a replay with the
	// same key must match it.
	CommandDigest string
	CreatedAt     time.Time
	PrevHash      string
	Hash          string
	// Signature is the participant's Ed25519 signature over the canonical
	// command bytes (64 bytes), nil for a participant without a key.
	Signature []byte
	// To is the participants a question or change request addresses, in
	// the order sent, nil for none; InReplyTo is the event a comment
	// answers. Both are part of the command the digest covers.
	To        []uuid.UUID
	InReplyTo uuid.NullUUID
	// Evidence is the canonical JSON of what proves an event recorded from
	// a reply email (record.Evidence); empty for an event posted over HTTP.
	Evidence string
}

// RoomEvent is the event as the decision rule sees it.
func (e Event) RoomEvent() room.Event {
	return room.Event{ID: e.ID.String(), Seq: e.Seq, ParticipantID: e.ParticipantID.String(), Revision: e.Revision, Action: e.Action, CreatedAt: e.CreatedAt, Evidence: e.Evidence}
}

// ToStrings is To as participant ids, nil for none.
func (e Event) ToStrings() []string {
	if len(e.To) == 0 {
		return nil
	}
	out := make([]string, len(e.To))
	for i, id := range e.To {
		out[i] = id.String()
	}
	return out
}

// InReplyToString is InReplyTo as an event id, "" for none.
func (e Event) InReplyToString() string {
	if !e.InReplyTo.Valid {
		return ""
	}
	return e.InReplyTo.UUID.String()
}

// Note is the event as the addressing rule sees it.
func (e Event) Note() room.Note {
	return room.Note{ID: e.ID.String(), Seq: e.Seq, ParticipantID: e.ParticipantID.String(), Action: e.Action, To: e.ToStrings(), InReplyTo: e.InReplyToString()}
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
		CreatedAt: r.CreatedAt, PrevHash: r.PrevHash, Hash: r.Hash, Signature: r.Signature, Evidence: deref(r.Evidence),
		To: nilIfEmpty(r.AddressedTo), InReplyTo: r.InReplyTo,
	}
}

// EventInsert appends e. A taken sequence number or a participant's reused
// idempotency key is room.ErrConflict.
func (q queries) EventInsert(ctx context.Context, e Event) error {
	err := q.q.EventInsert(ctx, eventParams(e))
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

// EventListAfter returns an agreement's events after seq, in sequence order.
func (q queries) EventListAfter(ctx context.Context, agreementID uuid.UUID, seq int64) ([]Event, error) {
	rows, err := q.q.EventListAfter(ctx, dbsqlc.EventListAfterParams{AgreementID: agreementID, Seq: seq})
	if err != nil {
		return nil, interpretError("list events after", err)
	}
	return convert(rows, eventFrom), nil
}

func eventParams(e Event) dbsqlc.EventInsertParams {
	return dbsqlc.EventInsertParams{
		ID: e.ID, AgreementID: e.AgreementID, Seq: e.Seq, ParticipantID: e.ParticipantID, Revision: int32(e.Revision),
		Action: e.Action, Body: e.Body, IdempotencyKey: e.IdempotencyKey, CommandDigest: e.CommandDigest,
		CreatedAt: e.CreatedAt, PrevHash: e.PrevHash, Hash: e.Hash, AddressedTo: e.To, InReplyTo: e.InReplyTo,
	}
}

func nilIfEmpty(ids []uuid.UUID) []uuid.UUID {
	if len(ids) == 0 {
		return nil
	}
	return ids
}

// EventReplyTarget reads the agreement and action of event id, what a
// reply naming it checks, or room.ErrNotFound.
func (q queries) EventReplyTarget(ctx context.Context, id uuid.UUID) (agreementID uuid.UUID, action string, err error) {
	r, err := q.q.EventReplyTarget(ctx, id)
	if err != nil {
		return uuid.Nil, "", interpretError("get reply target", err)
	}
	return r.AgreementID, r.Action, nil
}
