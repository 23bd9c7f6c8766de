package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/jobs"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// Outbox message states.
const (
	OutboxQueued   = "queued"
	OutboxRetrying = "retrying"
	OutboxSent     = "sent"
	OutboxFailed   = "failed"
)

// Outbox message kinds.
const (
	// OutboxInvitation carries an invitation's secret and proof.
	OutboxInvitation = "invitation"
	// OutboxRevision tells an existing participant that a new revision was
	// locked; it carries no credential.
	OutboxRevision = "revision"
	// OutboxEnrollment carries an operator's enrollment link; it has no
	// invitation or agreement, and the link's id (EnrollmentInsert).
	OutboxEnrollment = "enrollment"
)

// OutboxMessage is one email in the outbox: every email the service sends
// is one. SealedBody holds the body sealed under the server key (with the
// message's id as associated data) until the message is sent or
// superseded; it is nil in listings and afterwards.
type OutboxMessage struct {
	ID uuid.UUID
	// InvitationID and AgreementID are zero for an enrollment's email.
	InvitationID  uuid.UUID
	AgreementID   uuid.UUID
	Recipient     string
	Subject       string
	MessageID     string
	SealedBody    []byte
	State         string
	Attempts      int
	NextAttemptAt time.Time
	LastReply     *string
	CreatedAt     time.Time
	SentAt        *time.Time
	// Kind is OutboxInvitation (the default), OutboxRevision, OutboxAnswer,
	// OutboxEnrollment, OutboxOutcome or OutboxReminder.
	Kind string
	// ParticipantID is the recipient's slot, for an outcome email or a
	// reminder (zero for the others).
	ParticipantID uuid.UUID
	// RemindAt is the reminder time a reminder stands for.
	RemindAt *time.Time
	// References thread the message: the Message-IDs it answers, oldest
	// first. OutboxInsert adds the invitation's first email in front.
	References []string
}

// OutboxAttempt is one delivery attempt of an outbox message with the
// transport's reply.
type OutboxAttempt struct {
	OutboxID    uuid.UUID
	Attempt     int
	AttemptedAt time.Time
	OK          bool
	Reply       string
}

// OutboxInsert queues m from its ID, InvitationID, AgreementID, Recipient,
// Subject, MessageID, SealedBody, CreatedAt, Kind (empty: an invitation)
// and References, with the River job that will send it, both in tx: a
// committed change has its email, a rolled-back one none. The message
// threads under the invitation's first email (unless it is that email),
// then under m.References. A Message-ID in use is room.ErrConflict.
func (tx *Tx) OutboxInsert(ctx context.Context, m OutboxMessage) error {
	if m.Kind == "" {
		m.Kind = OutboxInvitation
	}
	err := tx.q.OutboxInsert(ctx, dbsqlc.OutboxInsertParams{
		ID: m.ID, InvitationID: m.InvitationID, AgreementID: m.AgreementID, Recipient: m.Recipient,
		Subject: m.Subject, MessageID: m.MessageID, SealedBody: m.SealedBody, CreatedAt: m.CreatedAt, Kind: m.Kind,
		Refs: append([]string{}, m.References...),
	})
	if err != nil {
		return interpretError("insert outbox message", err)
	}
	return interpretError("queue outbox message", jobs.InsertTx(ctx, tx.tx, jobs.Email{OutboxID: m.ID}))
}

// OutboxGet reads message id with its sealed body (nil once sent or given
// up), or room.ErrNotFound.
func (q queries) OutboxGet(ctx context.Context, id uuid.UUID) (OutboxMessage, error) {
	r, err := q.q.OutboxGet(ctx, id)
	if err != nil {
		return OutboxMessage{}, interpretError("get outbox message", err)
	}
	return OutboxMessage{
		ID: r.ID, InvitationID: r.InvitationID.UUID, AgreementID: r.AgreementID.UUID, Recipient: r.Recipient, Subject: r.Subject,
		MessageID: r.MessageID, SealedBody: r.SealedBody, State: r.State, Attempts: int(r.Attempts),
		NextAttemptAt: r.NextAttemptAt, LastReply: r.LastReply, CreatedAt: r.CreatedAt, SentAt: r.SentAt, Kind: r.Kind,
		ParticipantID: r.ParticipantID.UUID, RemindAt: r.RemindAt, References: r.Refs,
	}, nil
}

// ErrAlreadyRecorded is returned when an outbox message or a webhook
// delivery is no longer to be made: another attempt recorded it first, or
// it was dropped.
var ErrAlreadyRecorded = errors.New("store: the delivery is no longer pending")

func recorded(n int64, err error) (int64, error) {
	if err == nil && n == 0 {
		return 0, ErrAlreadyRecorded
	}
	return n, err
}

// OutboxMarkSent records a delivered message and erases its body;
// ErrAlreadyRecorded when it was no longer to send.
func (q queries) OutboxMarkSent(ctx context.Context, id uuid.UUID, reply string, sentAt time.Time) error {
	_, err := recorded(q.q.OutboxMarkSent(ctx, dbsqlc.OutboxMarkSentParams{ID: id, LastReply: &reply, SentAt: &sentAt}))
	return q.delivered(err, DeliverySent, "mark outbox message sent")
}

// OutboxMarkRetry records a temporary failure; the message is due again at
// next. ErrAlreadyRecorded when it was no longer to send.
func (q queries) OutboxMarkRetry(ctx context.Context, id uuid.UUID, reply string, next time.Time) error {
	_, err := recorded(q.q.OutboxMarkRetry(ctx, dbsqlc.OutboxMarkRetryParams{ID: id, LastReply: &reply, NextAttemptAt: next}))
	return q.delivered(err, DeliveryRetry, "mark outbox message for retry")
}

// OutboxMarkFailed records a failure for good and erases the body.
// ErrAlreadyRecorded when it was no longer to send.
func (q queries) OutboxMarkFailed(ctx context.Context, id uuid.UUID, reply string) error {
	_, err := recorded(q.q.OutboxMarkFailed(ctx, dbsqlc.OutboxMarkFailedParams{ID: id, LastReply: &reply}))
	return q.delivered(err, DeliveryFailed, "mark outbox message failed")
}

// OutboxSupersede drops the invitation's unsent messages and erases their
// bodies: a resend replaced the credentials they carry.
func (q queries) OutboxSupersede(ctx context.Context, invitationID uuid.UUID) error {
	return interpretError("supersede outbox messages", q.q.OutboxSupersede(ctx, uuid.NullUUID{UUID: invitationID, Valid: true}))
}

// OutboxAttemptInsert records one delivery attempt. A second record of the
// same attempt is room.ErrConflict.
func (q queries) OutboxAttemptInsert(ctx context.Context, a OutboxAttempt) error {
	err := q.q.OutboxAttemptInsert(ctx, dbsqlc.OutboxAttemptInsertParams{
		OutboxID: a.OutboxID, Attempt: int32(a.Attempt), AttemptedAt: a.AttemptedAt, Ok: a.OK, Reply: a.Reply,
	})
	return interpretError("insert outbox attempt", err)
}

// OutboxListByAgreement returns an agreement's messages, oldest first,
// without their bodies.
func (q queries) OutboxListByAgreement(ctx context.Context, agreementID uuid.UUID) ([]OutboxMessage, error) {
	rows, err := q.q.OutboxListByAgreement(ctx, uuid.NullUUID{UUID: agreementID, Valid: true})
	if err != nil {
		return nil, interpretError("list outbox messages", err)
	}
	return convert(rows, func(r dbsqlc.OutboxListByAgreementRow) OutboxMessage {
		return OutboxMessage{
			ID: r.ID, InvitationID: r.InvitationID.UUID, AgreementID: agreementID, Recipient: r.Recipient, Subject: r.Subject,
			MessageID: r.MessageID, State: r.State, Attempts: int(r.Attempts), NextAttemptAt: r.NextAttemptAt,
			LastReply: r.LastReply, CreatedAt: r.CreatedAt, SentAt: r.SentAt, Kind: r.Kind,
		}
	}), nil
}

// OutboxAttemptListByAgreement returns every delivery attempt of an
// agreement's messages in the order they were made.
func (q queries) OutboxAttemptListByAgreement(ctx context.Context, agreementID uuid.UUID) ([]OutboxAttempt, error) {
	rows, err := q.q.OutboxAttemptListByAgreement(ctx, uuid.NullUUID{UUID: agreementID, Valid: true})
	if err != nil {
		return nil, interpretError("list outbox attempts", err)
	}
	return convert(rows, func(r dbsqlc.OutboxAttempt) OutboxAttempt {
		return OutboxAttempt{OutboxID: r.OutboxID, Attempt: int(r.Attempt), AttemptedAt: r.AttemptedAt, OK: r.Ok, Reply: r.Reply}
	}), nil
}

// OutboxAdoptEnrollment makes the email of enrollment id, when a replica
// of the previous release wrote it into the enrollment's own columns, the
// outbox message with that id; an enrollment already in the outbox, or
// without an email, is left alone.
func (q queries) OutboxAdoptEnrollment(ctx context.Context, id uuid.UUID) error {
	return interpretError("adopt enrollment email", q.q.OutboxAdoptEnrollment(ctx, id))
}
