package outbox

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/consensus-md/consensus/internal/jobs"
	"github.com/consensus-md/consensus/internal/mail"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// EnrollmentWorker sends the email of an operator's enrollment link, as
// Worker sends an invitation's: the body is sealed in the link's row until
// sent, the attempt is recorded in a short transaction after the send, and
// a message recorded sent is never sent again. It shares Mail's transport,
// keys, sender and schedule.
type EnrollmentWorker struct {
	river.WorkerDefaults[jobs.EnrollmentEmail]
	Mail *Worker
}

// Work runs one enrollment email job.
func (e *EnrollmentWorker) Work(ctx context.Context, job *river.Job[jobs.EnrollmentEmail]) error {
	w := e.Mail
	w.defaults()
	m, err := w.Store.EnrollmentGet(ctx, job.Args.EnrollmentID)
	if errors.Is(err, room.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if (m.State != store.OutboxQueued && m.State != store.OutboxRetrying) || m.SealedBody == nil {
		return nil
	}
	now := w.Now().UTC()
	body, err := w.Keys.Open(m.SealedBody, m.ID[:])
	var sendErr error
	var receipt mail.Receipt
	if err != nil {
		sendErr = &mail.PermanentError{Reply: "sealed body cannot be opened (was CONSENSUS_TOKEN_KEY changed?)", Err: err}
	} else {
		sctx, cancel := context.WithTimeout(ctx, w.SendTimeout)
		receipt, sendErr = w.Transport.Send(sctx, &mail.Message{MessageID: m.MessageID, From: w.From, To: m.Recipient, Subject: m.Subject, Date: now, Body: string(body)})
		cancel()
	}
	if sendErr != nil && ctx.Err() != nil {
		return river.JobSnooze(0)
	}
	dbctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordMargin)
	defer cancel()
	state, reply, result := store.OutboxSent, receipt.Reply, error(nil)
	switch {
	case sendErr == nil:
	case mail.IsPermanent(sendErr) || job.Attempt >= jobs.EmailMaxAttempts:
		state, reply = store.OutboxFailed, sendErr.Error()
	default:
		state, reply = store.OutboxRetrying, sendErr.Error()
		result = errRetry{reply}
	}
	w.Log.Info("outbox: enrollment email", slog.String("enrollment_id", m.ID.String()), slog.String("state", state))
	if err := w.Store.EnrollmentMark(dbctx, m.ID, state, reply, now); err != nil && !errors.Is(err, store.ErrAlreadyRecorded) {
		return err
	}
	return result
}

// NextRetry follows the invitation emails' schedule.
func (e *EnrollmentWorker) NextRetry(job *river.Job[jobs.EnrollmentEmail]) time.Time {
	e.Mail.defaults()
	return e.Mail.Now().Add(e.Mail.backoff(job.Args.EnrollmentID, job.Attempt))
}
