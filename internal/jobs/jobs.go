// Package jobs names the work that leaves the process and runs on River's
// durable queue (github.com/riverqueue/river, pgx v5 driver): an email of
// the outbox, a webhook delivery, and the periodic sweeps (deadlines,
// sessions, reminders). It holds the job
// arguments, the queue names and the insert-only client with which the store
// queues a job in the caller's transaction, so a change and the work it
// causes commit together or not at all. The workers live with what they do
// (outbox, webhook/deliver, daemon); daemon runs them.
package jobs

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// Queues. Each has its own workers, so a slow receiver of webhooks never
// holds a worker that an email needs.
const (
	QueueEmail = "email"
	// QueueNotice holds the emails written when sent (jobs.Notice).
	QueueNotice  = "notice"
	QueueWebhook = "webhook"
	QueueSweep   = "sweep"
)

// Job kinds, as River stores them. Nothing but River's client writes its
// tables: every job goes in through InsertTx or InsertManyTx.
const (
	KindEmail         = "email"
	KindWebhook       = "webhook_delivery"
	KindDeadlineSweep = "deadline_sweep"
	KindSessionSweep  = "session_sweep"
	KindReminderSweep = "reminder_sweep"
	KindEnrollment    = "enrollment_email"
	KindNotice        = "notice_email"
)

// EmailMaxAttempts ends retrying an email in failed.
const EmailMaxAttempts = 12

// WebhookMaxAttempts is the first attempt and the six retries of the
// webhook schedule (webhook.Schedule).
const WebhookMaxAttempts = 7

// Email sends the outbox message OutboxID; the message row holds the
// recipient, the sealed body and the delivery state.
type Email struct {
	OutboxID uuid.UUID `json:"outbox_id"`
}

// Kind implements river.JobArgs.
func (Email) Kind() string { return KindEmail }

// InsertOpts puts emails on their queue with their attempt limit.
func (Email) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueEmail, MaxAttempts: EmailMaxAttempts}
}

// Notice sends an outbox message that carries no stored body (an outcome
// email or a reminder), which the worker writes when it sends it. It has
// a queue of its own, which only replicas of this release work on: a
// replica of the previous release, still running during a rolling
// upgrade, would take a job of the email queue and fail the message for
// good, finding no body to open.
type Notice struct {
	OutboxID uuid.UUID `json:"outbox_id"`
}

// Kind implements river.JobArgs.
func (Notice) Kind() string { return KindNotice }

// InsertOpts puts notices on their queue with the email attempt limit.
func (Notice) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueNotice, MaxAttempts: EmailMaxAttempts}
}

// EnrollmentEmail is the job an enrollment link's email had before
// migration 00023 made that email an outbox message with the link's id:
// it sends the outbox message EnrollmentID as Email does. Nothing queues
// it any more; the jobs queued before the migration still run.
type EnrollmentEmail struct {
	EnrollmentID uuid.UUID `json:"enrollment_id"`
}

// Kind implements river.JobArgs.
func (EnrollmentEmail) Kind() string { return KindEnrollment }

// InsertOpts puts enrollment emails on the email queue with its attempt limit.
func (EnrollmentEmail) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueEmail, MaxAttempts: EmailMaxAttempts}
}

// Webhook makes the delivery DeliveryID (its id is the webhook-id, the same
// on every attempt) to the endpoint of ParticipantID.
type Webhook struct {
	DeliveryID    uuid.UUID `json:"delivery_id"`
	ParticipantID uuid.UUID `json:"participant_id"`
}

// Kind implements river.JobArgs.
func (Webhook) Kind() string { return KindWebhook }

// InsertOpts puts deliveries on their queue with the schedule's length.
func (Webhook) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueWebhook, MaxAttempts: WebhookMaxAttempts}
}

// DeadlineSweep settles the rooms whose deadline passed while pending.
type DeadlineSweep struct{}

// Kind implements river.JobArgs.
func (DeadlineSweep) Kind() string { return KindDeadlineSweep }

// InsertOpts: a sweep that fails is simply run again by the next period.
func (DeadlineSweep) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueSweep, MaxAttempts: 1}
}

// SessionSweep deletes expired sessions.
type SessionSweep struct{}

// Kind implements river.JobArgs.
func (SessionSweep) Kind() string { return KindSessionSweep }

// InsertOpts: a sweep that fails is simply run again by the next period.
func (SessionSweep) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueSweep, MaxAttempts: 1}
}

// ReminderSweep queues the reminders that are due.
type ReminderSweep struct{}

// Kind implements river.JobArgs.
func (ReminderSweep) Kind() string { return KindReminderSweep }

// InsertOpts: a sweep that fails is simply run again by the next period.
func (ReminderSweep) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueSweep, MaxAttempts: 1}
}

var inserter = sync.OnceValues(func() (*river.Client[pgx.Tx], error) {
	// Without a pool and without queues the client only inserts, and only
	// in a transaction it is given.
	return river.NewClient(riverpgxv5.New(nil), &river.Config{SkipUnknownJobCheck: true})
})

// InsertTx queues args in tx: the job exists once tx commits, and never if
// it rolls back.
func InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs) error {
	return InsertManyTx(ctx, tx, []river.JobArgs{args})
}

// InsertManyTx queues every job of args in tx, in one statement (and
// River's wake-up for their queues), as InsertTx queues one.
func InsertManyTx(ctx context.Context, tx pgx.Tx, args []river.JobArgs) error {
	if len(args) == 0 {
		return nil
	}
	c, err := inserter()
	if err != nil {
		return fmt.Errorf("jobs: insert-only client: %w", err)
	}
	params := make([]river.InsertManyParams, len(args))
	for i, a := range args {
		params[i] = river.InsertManyParams{Args: a}
	}
	if _, err := c.InsertManyTx(ctx, tx, params); err != nil {
		return fmt.Errorf("jobs: insert %s: %w", args[0].Kind(), err)
	}
	return nil
}
