package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/consensus-md/consensus/internal/jobs"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// Outbox message kinds that carry no stored body: the worker writes each
// from the agreement's state when it sends it, as neither holds a secret.
const (
	// OutboxOutcome tells a participant the final outcome, once per
	// participant.
	OutboxOutcome = "outcome"
	// OutboxReminder reminds a required participant who has not decided
	// of the deadline, once per participant and reminder time.
	OutboxReminder = "reminder"
)

// emailJobs are the River jobs of outbox messages ids, outcome emails or
// reminders: on the notice queue (see jobs.Notice).
func emailJobs(ids []uuid.UUID) []river.JobArgs {
	out := make([]river.JobArgs, len(ids))
	for i, id := range ids {
		out[i] = jobs.Notice{OutboxID: id}
	}
	return out
}

// queueOutcome writes the outcome emails of agreement id, whose outcome
// tx made final at decidedAt, and queues their jobs, both in tx.
func queueOutcome(ctx context.Context, tx pgx.Tx, id uuid.UUID, decidedAt time.Time) error {
	ids, err := dbsqlc.New(tx).OutboxQueueOutcome(ctx, dbsqlc.OutboxQueueOutcomeParams{AgreementID: id, Now: decidedAt})
	if err != nil {
		return interpretError("queue outcome emails", err)
	}
	return interpretError("queue outcome emails", jobs.InsertManyTx(ctx, tx, emailJobs(ids)))
}

// queueOutcomeStep adds to p, for a pipelined transaction, the outcome
// emails of agreement id; their jobs are added to *out when p is sent.
func queueOutcomeStep(ctx context.Context, p *pipeline, id uuid.UUID, decidedAt time.Time, out *[]river.JobArgs) {
	p.add(func(db dbsqlc.DBTX) error {
		ids, err := dbsqlc.New(db).OutboxQueueOutcome(ctx, dbsqlc.OutboxQueueOutcomeParams{AgreementID: id, Now: decidedAt})
		if err != nil {
			return interpretError("queue outcome emails", err)
		}
		*out = append(*out, emailJobs(ids)...)
		return nil
	})
}

// OutboxQueueReminders queues, in one transaction, the reminders due at
// now (see the OutboxQueueReminders query: at most one per participant and
// reminder time, whoever runs it) with their email jobs, and returns how
// many it queued.
func (s *Store) OutboxQueueReminders(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := s.InTx(ctx, func(tx *Tx) error {
		ids, err := tx.q.OutboxQueueReminders(ctx, now)
		if err != nil {
			return interpretError("queue reminders", err)
		}
		n = len(ids)
		return interpretError("queue reminders", jobs.InsertManyTx(ctx, tx.tx, emailJobs(ids)))
	})
	return n, err
}

// OutboxDrop gives up message id without an attempt, with why as its last
// reply: a reminder that is no longer due. ErrAlreadyRecorded when it was
// no longer to send.
func (q queries) OutboxDrop(ctx context.Context, id uuid.UUID, why string) error {
	_, err := recorded(q.q.OutboxDrop(ctx, dbsqlc.OutboxDropParams{ID: id, LastReply: &why}))
	return interpretError("drop outbox message", err)
}

// AgreementSetReminders stores when a new agreement, with deadline, reminds
// its required participants who have not decided: durations before the
// deadline, latest first, in whole seconds (none: never).
func (tx *Tx) AgreementSetReminders(ctx context.Context, id uuid.UUID, deadline time.Time, before []time.Duration) error {
	return interpretError("set reminders", tx.q.AgreementSetReminders(ctx, dbsqlc.AgreementSetRemindersParams{
		ID: id, Reminders: secondsOf(before), RemindFrom: remindFrom(deadline, before)}))
}
