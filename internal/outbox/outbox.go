// Package outbox sends the emails of the durable outbox: every email the
// service sends (invitations, revision notices, reply answers, reminders,
// outcome emails, enrollment links). Each email is an outbox row
// (recipient, subject, stable Message-ID, the Message-IDs it threads under,
// body sealed under the server key, delivery state) and a River job naming
// it, both written in the transaction of the change that causes the email;
// a reminder and an outcome email hold no secret and no stored body, which
// the worker writes when it sends them (notice.go). Worker runs those jobs: it reads the row, sends it unless it
// was already sent or given up, and records the attempt (a row of
// outbox_attempts and the message's state) in a short transaction of its
// own. The mail exchange
// never runs inside a transaction, so a serialization retry of the record
// cannot send again and no row lock or connection waits on the relay.
//
// River delivers a job at least once. An email sent whose record was then
// lost (the process died in between) is sent again under the same
// Message-ID; an email recorded sent is never sent again, whichever worker
// or replica runs its job.
package outbox

import (
	"context"
	"errors"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/consensus-md/consensus/internal/jobs"
	"github.com/consensus-md/consensus/internal/mail"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
)

// Worker sends queued emails; it is River's worker of jobs.Email.
type Worker struct {
	river.WorkerDefaults[jobs.Email]

	Store     *store.Store
	Keys      *secret.Keys
	Transport mail.Transport
	From      string
	// ReplyAddress, when set, gives every message of an invitation a
	// Reply-To naming it (mail.ReplyAddress with the invitation's tag).
	ReplyAddress string
	// Origin is the service's public origin, for the links of the emails
	// the worker writes itself (outcome emails and reminders).
	Origin string
	Log    *slog.Logger
	Now    func() time.Time
	// BaseBackoff is the first retry delay; it doubles per attempt up to MaxBackoff.
	BaseBackoff, MaxBackoff time.Duration
	// SendTimeout bounds one delivery attempt.
	SendTimeout time.Duration
	// RecordHook, when set, runs at the start of each try of the record
	// transaction: a test forces a conflict there. Nil in production.
	RecordHook func(ctx context.Context)

	once sync.Once
}

// defaults fills the zero settings once; River calls a worker from many
// goroutines.
func (w *Worker) defaults() { w.once.Do(w.fill) }

func (w *Worker) fill() {
	if w.Now == nil {
		w.Now = time.Now
	}
	if w.BaseBackoff <= 0 {
		w.BaseBackoff = 30 * time.Second
	}
	if w.MaxBackoff <= 0 {
		w.MaxBackoff = time.Hour
	}
	if w.SendTimeout <= 0 {
		w.SendTimeout = time.Minute
	}
}

// recordMargin is how long past SendTimeout an attempt may take to be
// recorded.
const recordMargin = 15 * time.Second

// Work runs one email job (River calls it).
func (w *Worker) Work(ctx context.Context, job *river.Job[jobs.Email]) error {
	return w.Deliver(ctx, job.Args.OutboxID)
}

// NextRetry is when River runs a job again after a temporary failure: the
// same time the attempt's record shows.
func (w *Worker) NextRetry(job *river.Job[jobs.Email]) time.Time {
	return w.retryAt(job.Args.OutboxID, job.Attempt)
}

// retryAt is when message id is tried again after its attempt-th attempt
// failed: the NextRetry of every worker that delivers through w.
func (w *Worker) retryAt(id uuid.UUID, attempt int) time.Time {
	w.defaults()
	return w.Now().Add(w.backoff(id, attempt))
}

// Timeout bounds a job: the send and its record. River cancels the job's
// context then; the record, begun before, finishes under its own.
func (w *Worker) Timeout(*river.Job[jobs.Email]) time.Duration {
	w.defaults()
	return w.SendTimeout + recordMargin
}

// NoticeWorker runs the jobs.Notice jobs: Mail delivers their messages,
// as it does every other.
type NoticeWorker struct {
	river.WorkerDefaults[jobs.Notice]
	Mail *Worker
}

// Work delivers the notice's outbox message.
func (n NoticeWorker) Work(ctx context.Context, job *river.Job[jobs.Notice]) error {
	return n.Mail.Deliver(ctx, job.Args.OutboxID)
}

// NextRetry and Timeout are Mail's.
func (n NoticeWorker) NextRetry(job *river.Job[jobs.Notice]) time.Time {
	return n.Mail.retryAt(job.Args.OutboxID, job.Attempt)
}

func (n NoticeWorker) Timeout(*river.Job[jobs.Notice]) time.Duration {
	return n.Mail.Timeout(nil)
}

// EnrollmentWorker runs the jobs.EnrollmentEmail jobs queued before
// migration 00023 made each enrollment's email the outbox message with the
// enrollment's id: Mail delivers that message, as it does every other.
type EnrollmentWorker struct {
	river.WorkerDefaults[jobs.EnrollmentEmail]
	Mail *Worker
}

// Work delivers the enrollment's outbox message, adopting first the email
// a replica of the previous release wrote into the enrollment's row during
// a rolling upgrade.
func (e EnrollmentWorker) Work(ctx context.Context, job *river.Job[jobs.EnrollmentEmail]) error {
	if err := e.Mail.Store.OutboxAdoptEnrollment(ctx, job.Args.EnrollmentID); err != nil {
		return err
	}
	return e.Mail.Deliver(ctx, job.Args.EnrollmentID)
}

// NextRetry and Timeout are Mail's.
func (e EnrollmentWorker) NextRetry(job *river.Job[jobs.EnrollmentEmail]) time.Time {
	return e.Mail.retryAt(job.Args.EnrollmentID, job.Attempt)
}

func (e EnrollmentWorker) Timeout(*river.Job[jobs.EnrollmentEmail]) time.Duration {
	return e.Mail.Timeout(nil)
}

// errRetry is what Deliver returns after recording a temporary failure:
// River runs the job again at NextRetry.
type errRetry struct{ reply string }

func (e errRetry) Error() string { return "outbox: will retry: " + e.reply }

// Deliver sends outbox message id unless it was already sent or given up,
// and records the attempt. It returns nil when nothing is left to do, an
// error when the job should run again (a temporary failure, recorded as
// retrying, or a database that failed), and river.JobSnooze(0) when ctx
// ended mid-send (shutdown: the attempt does not count).
func (w *Worker) Deliver(ctx context.Context, id uuid.UUID) error {
	w.defaults()
	m, err := w.Store.OutboxGet(ctx, id)
	if errors.Is(err, room.ErrNotFound) {
		w.Log.Warn("outbox: a job names no message", slog.String("outbox_id", id.String()))
		return nil
	}
	if err != nil {
		return err
	}
	if m.State != store.OutboxQueued && m.State != store.OutboxRetrying {
		return nil // sent, given up or superseded: a rerun sends nothing
	}
	now := w.Now().UTC()
	attempt := m.Attempts + 1
	msg, drop, err := w.message(ctx, m, now)
	if drop != "" {
		w.Log.Info("outbox: dropped", slog.String("outbox_id", m.ID.String()), slog.String("reply", drop))
		if err := w.Store.OutboxDrop(ctx, m.ID, drop); err != nil && !errors.Is(err, store.ErrAlreadyRecorded) {
			return err
		}
		return nil
	}
	if err != nil && !mail.IsPermanent(err) {
		return err // the data of a notice could not be read: River runs the job again
	}
	var receipt mail.Receipt
	sendErr := err
	if sendErr == nil {
		receipt, sendErr = w.send(ctx, msg)
	}
	if sendErr != nil && ctx.Err() != nil {
		return river.JobSnooze(0) // cut short by shutdown: the attempt does not count
	}
	// What happened must be recorded even if ctx ends now (shutdown while
	// the relay accepted the message), or a message the relay took would
	// be sent again: the record gets its own bounded context.
	dbctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordMargin)
	defer cancel()
	log := w.Log.With(slog.String("outbox_id", m.ID.String()), slog.Int("attempt", attempt))
	var result error
	var mark func(tx *store.Tx) error
	reply := receipt.Reply
	switch {
	case sendErr == nil:
		mark = func(tx *store.Tx) error { return tx.OutboxMarkSent(dbctx, m.ID, receipt.Reply, now) }
		log.Info("outbox: sent")
	case mail.IsPermanent(sendErr) || attempt >= jobs.EmailMaxAttempts:
		reply = sendErr.Error()
		mark = func(tx *store.Tx) error { return tx.OutboxMarkFailed(dbctx, m.ID, reply) }
		log.Warn("outbox: failed for good", slog.String("reply", reply))
	default:
		reply = sendErr.Error()
		next := now.Add(w.backoff(m.ID, attempt))
		mark = func(tx *store.Tx) error { return tx.OutboxMarkRetry(dbctx, m.ID, reply, next) }
		log.Info("outbox: will retry", slog.String("reply", reply), slog.Time("next_attempt_at", next))
		result = errRetry{reply}
	}
	err = w.Store.InTx(dbctx, func(tx *store.Tx) error {
		if w.RecordHook != nil {
			w.RecordHook(dbctx)
		}
		if err := tx.OutboxAttemptInsert(dbctx, store.OutboxAttempt{OutboxID: m.ID, Attempt: attempt, AttemptedAt: now, OK: sendErr == nil, Reply: reply}); err != nil {
			return err
		}
		return mark(tx)
	})
	if errors.Is(err, store.ErrAlreadyRecorded) || errors.Is(err, room.ErrConflict) {
		return nil // another run recorded this message first
	}
	if err != nil {
		log.Error("outbox: recording the attempt failed", slog.String("error", err.Error()))
		return err
	}
	return result
}

// message is the email m stands for, sent at now: its stored body opened,
// or the notice written (an outcome email, a reminder). drop, when set,
// says why m is no longer to be sent. An error that retrying cannot help
// is a *mail.PermanentError.
func (w *Worker) message(ctx context.Context, m store.OutboxMessage, now time.Time) (msg *mail.Message, drop string, err error) {
	msg = &mail.Message{MessageID: m.MessageID, From: w.From, To: m.Recipient, Subject: m.Subject, Date: now, References: m.References}
	if w.ReplyAddress != "" && m.InvitationID != uuid.Nil {
		msg.ReplyTo = mail.ReplyAddress(w.ReplyAddress, w.Keys.ReplyTag(m.InvitationID))
	}
	if m.Kind == store.OutboxOutcome || m.Kind == store.OutboxReminder {
		n, err := w.composeNotice(ctx, m, now)
		if errors.Is(err, errNoticeData) || errors.Is(err, room.ErrNotFound) {
			return nil, "", &mail.PermanentError{Reply: err.Error(), Err: err}
		}
		if err != nil {
			return nil, "", err
		}
		msg.Body, msg.Attachments = n.body, n.attachments
		return msg, n.drop, nil
	}
	body, err := w.Keys.Open(m.SealedBody, m.ID[:])
	if err != nil {
		return nil, "", &mail.PermanentError{Reply: "sealed body cannot be opened (was CONSENSUS_TOKEN_KEY changed?)", Err: err}
	}
	msg.Body = string(body)
	return msg, "", nil
}

// send hands msg to the transport, bounded by SendTimeout.
func (w *Worker) send(ctx context.Context, msg *mail.Message) (mail.Receipt, error) {
	sctx, cancel := context.WithTimeout(ctx, w.SendTimeout)
	defer cancel()
	return w.Transport.Send(sctx, msg)
}

// backoff is BaseBackoff·2^(attempt-1), capped, with ±20% jitter so retries
// from many messages do not arrive together. The jitter is drawn from the
// message and the attempt, so the time recorded for the next attempt and
// the time River runs it agree.
func (w *Worker) backoff(id uuid.UUID, attempt int) time.Duration {
	d := w.BaseBackoff
	for i := 1; i < attempt && d < w.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, w.MaxBackoff)
	h := fnv.New64a()
	h.Write(id[:])
	h.Write([]byte{byte(attempt)})
	unit := float64(h.Sum64()%10000) / 10000
	return d + time.Duration((unit*0.4-0.2)*float64(d))
}
