package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// Webhook is a participant's registered endpoint with its delivery state.
type Webhook struct {
	URL            string
	CreatedAt      time.Time
	DisabledAt     *time.Time
	DisabledReason string
	// Pending and Failed count deliveries still to make and given up.
	Pending, Failed int64
	// Last is the most recent delivery that was attempted, if any.
	Last *WebhookAttempt
}

// WebhookAttempt is the outcome of a delivery's latest attempt.
type WebhookAttempt struct {
	State      string // queued, retrying, delivered, failed
	Attempts   int
	Status     *int // the receiver's HTTP status; nil when none answered
	FinishedAt *time.Time
}

// WebhookDelivery is one queued notification for one receiver, with the
// URL of its endpoint when it was read.
type WebhookDelivery struct {
	ID, ParticipantID, AgreementID, InvitationID uuid.UUID
	Type                                         string
	Seq                                          int64
	Outcome                                      string
	Attempts                                     int
	CreatedAt                                    time.Time
	URL                                          string
}

// Webhook delivery states, as WebhookDeliveryFinish records them.
const (
	HookDelivered = "delivered"
	HookRetrying  = "retrying"
	HookFailed    = "failed"
)

// WebhookUpsert registers or replaces participantID's endpoint, live.
func (q queries) WebhookUpsert(ctx context.Context, participantID uuid.UUID, url string, now time.Time) error {
	return interpretError("register webhook", q.q.WebhookUpsert(ctx, dbsqlc.WebhookUpsertParams{ID: participantID, Url: url, CreatedAt: now}))
}

// WebhookGet reads participantID's endpoint, or room.ErrNotFound.
func (q queries) WebhookGet(ctx context.Context, participantID uuid.UUID) (Webhook, error) {
	r, err := q.q.WebhookGet(ctx, participantID)
	if err != nil {
		return Webhook{}, interpretError("get webhook", err)
	}
	w := Webhook{URL: r.Url, CreatedAt: r.CreatedAt, DisabledAt: r.DisabledAt, Pending: r.Pending, Failed: r.Failed}
	if r.DisabledReason != nil {
		w.DisabledReason = *r.DisabledReason
	}
	if r.LastState != "" {
		w.Last = &WebhookAttempt{State: r.LastState, Attempts: int(r.LastAttempts), FinishedAt: r.LastFinishedAt}
		if r.LastStatus != nil {
			status := int(*r.LastStatus)
			w.Last.Status = &status
		}
	}
	return w, nil
}

// WebhookDelete removes participantID's endpoint and drops its queued
// deliveries; room.ErrNotFound when there was none.
func (q queries) WebhookDelete(ctx context.Context, participantID uuid.UUID, now time.Time) error {
	n, err := q.q.WebhookDelete(ctx, dbsqlc.WebhookDeleteParams{ParticipantID: participantID, FinishedAt: &now})
	if err != nil {
		return interpretError("delete webhook", err)
	}
	if n == 0 {
		return room.ErrNotFound
	}
	return nil
}

// WebhookDeliveryGet reads delivery id with its endpoint's URL while it
// is still to be made; room.ErrNotFound once it was made, given up, or
// dropped with its endpoint (removed or disabled).
func (q queries) WebhookDeliveryGet(ctx context.Context, id uuid.UUID) (WebhookDelivery, error) {
	r, err := q.q.WebhookDeliveryGet(ctx, id)
	if err != nil {
		return WebhookDelivery{}, interpretError("get webhook delivery", err)
	}
	return WebhookDelivery{ID: r.ID, ParticipantID: r.ParticipantID, AgreementID: r.AgreementID, InvitationID: r.InvitationID,
		Type: r.Type, Seq: r.Seq, Outcome: r.Outcome, Attempts: int(r.Attempts), CreatedAt: r.CreatedAt, URL: r.Url}, nil
}

// WebhookDeliveryFinish records an attempt of delivery id: its new state,
// the receiver's status (0 when none answered), what went wrong, and when to
// try again (for HookRetrying). A delivery no longer to be made (dropped
// while the attempt was in flight, or recorded by another attempt) is left
// as it is: ErrAlreadyRecorded.
func (q queries) WebhookDeliveryFinish(ctx context.Context, id uuid.UUID, state string, status int, problem string, next, now time.Time) error {
	p := dbsqlc.WebhookDeliveryFinishParams{ID: id, State: state, NextAttemptAt: next, Now: now}
	if status != 0 {
		s := int32(status)
		p.LastStatus = &s
	}
	if problem != "" {
		p.LastError = &problem
	}
	_, err := recorded(q.q.WebhookDeliveryFinish(ctx, p))
	return interpretError("finish webhook delivery", err)
}

// WebhookDisable turns participantID's endpoint off for reason and drops
// its other queued deliveries (deliveryID is recorded by its caller).
func (q queries) WebhookDisable(ctx context.Context, participantID, deliveryID uuid.UUID, reason string, now time.Time) error {
	return interpretError("disable webhook", q.q.WebhookDisable(ctx, dbsqlc.WebhookDisableParams{Now: &now, Reason: &reason, ParticipantID: participantID, DeliveryID: deliveryID}))
}
