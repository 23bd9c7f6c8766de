// Package outbox drains the durable invitation outbox: it takes one due
// message at a time under a row lock (FOR UPDATE SKIP LOCKED, so workers in
// every replica share the queue without sending a message twice
// concurrently), opens its sealed body, hands it to the mail transport and
// records the attempt. Temporary failures retry with exponential backoff and
// jitter; permanent ones, or too many attempts, end in failed.
package outbox

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/consensus-md/consensus/internal/mail"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
)

// Worker delivers queued invitation emails.
type Worker struct {
	Store     *store.Store
	Keys      *secret.Keys
	Transport mail.Transport
	From      string
	// ReplyAddress, when set, gives every message a Reply-To naming its
	// invitation (mail.ReplyAddress with the invitation's tag).
	ReplyAddress string
	Log          *slog.Logger
	Now          func() time.Time
	// Poll is how long an idle worker waits before looking again.
	Poll time.Duration
	// BaseBackoff is the first retry delay; it doubles per attempt up to MaxBackoff.
	BaseBackoff, MaxBackoff time.Duration
	// MaxAttempts ends retrying in failed.
	MaxAttempts int
	// SendTimeout bounds one delivery attempt.
	SendTimeout time.Duration
}

func (w *Worker) defaults() {
	if w.Now == nil {
		w.Now = time.Now
	}
	if w.Poll <= 0 {
		w.Poll = time.Second
	}
	if w.BaseBackoff <= 0 {
		w.BaseBackoff = 30 * time.Second
	}
	if w.MaxBackoff <= 0 {
		w.MaxBackoff = time.Hour
	}
	if w.MaxAttempts <= 0 {
		w.MaxAttempts = 12
	}
	if w.SendTimeout <= 0 {
		w.SendTimeout = time.Minute
	}
}

// Run delivers until ctx ends.
func (w *Worker) Run(ctx context.Context) {
	w.defaults()
	for ctx.Err() == nil {
		sent, err := w.DeliverOne(ctx)
		if err != nil && ctx.Err() == nil {
			w.Log.Error("outbox: delivery round failed", slog.String("error", err.Error()))
		}
		if sent && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(w.Poll):
		}
	}
}

// DeliverOne attempts the next due message, if any, and reports whether
// there was one. The row stays locked while the transport runs, so a
// concurrent worker skips it; if this process dies mid-send the lock goes
// with its connection and the message is attempted again (at-least-once,
// with a stable Message-ID).
func (w *Worker) DeliverOne(ctx context.Context) (bool, error) {
	w.defaults()
	found := false
	// ctx may end (shutdown) while the relay is accepting the message; what
	// happened must still be recorded, or a message the relay took would be
	// rolled back to queued and sent again. So the transaction runs on a
	// context that outlives ctx by a bounded time, and only the send itself
	// is cut short by ctx.
	dbctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.SendTimeout+10*time.Second)
	defer cancel()
	err := w.Store.InTx(dbctx, func(tx *store.Tx) error {
		now := w.Now().UTC()
		m, err := tx.OutboxClaimDue(dbctx, now)
		if errors.Is(err, room.ErrNotFound) {
			return nil // nothing due, or every due message is being sent by another worker
		}
		if err != nil {
			return err
		}
		found = true
		attempt := m.Attempts + 1
		receipt, sendErr := w.send(ctx, m, now)
		if sendErr != nil && ctx.Err() != nil {
			return ctx.Err() // cut short by shutdown: roll back, the attempt does not count
		}
		record := func(ok bool, reply string) error {
			return tx.OutboxAttemptInsert(dbctx, store.OutboxAttempt{OutboxID: m.ID, Attempt: attempt, AttemptedAt: now, OK: ok, Reply: reply})
		}
		switch {
		case sendErr == nil:
			w.Log.Info("outbox: sent", slog.String("outbox_id", m.ID.String()), slog.Int("attempt", attempt))
			if err := tx.OutboxMarkSent(dbctx, m.ID, receipt.Reply, now); err != nil {
				return err
			}
			return record(true, receipt.Reply)
		case mail.IsPermanent(sendErr) || attempt >= w.MaxAttempts:
			reply := sendErr.Error()
			w.Log.Warn("outbox: failed for good", slog.String("outbox_id", m.ID.String()), slog.Int("attempt", attempt), slog.String("reply", reply))
			if err := tx.OutboxMarkFailed(dbctx, m.ID, reply); err != nil {
				return err
			}
			return record(false, reply)
		default:
			reply := sendErr.Error()
			next := now.Add(w.backoff(attempt))
			w.Log.Info("outbox: will retry", slog.String("outbox_id", m.ID.String()), slog.Int("attempt", attempt), slog.String("reply", reply), slog.Time("next_attempt_at", next))
			if err := tx.OutboxMarkRetry(dbctx, m.ID, reply, next); err != nil {
				return err
			}
			return record(false, reply)
		}
	})
	return found, err
}

func (w *Worker) send(ctx context.Context, m store.OutboxMessage, now time.Time) (mail.Receipt, error) {
	body, err := w.Keys.Open(m.SealedBody, m.ID[:])
	if err != nil {
		return mail.Receipt{}, &mail.PermanentError{Reply: "sealed body cannot be opened (was CONSENSUS_TOKEN_KEY changed?)", Err: err}
	}
	sctx, cancel := context.WithTimeout(ctx, w.SendTimeout)
	defer cancel()
	msg := &mail.Message{MessageID: m.MessageID, From: w.From, To: m.Recipient, Subject: m.Subject, Date: now, Body: string(body)}
	if w.ReplyAddress != "" {
		msg.ReplyTo = mail.ReplyAddress(w.ReplyAddress, w.Keys.ReplyTag(m.InvitationID))
	}
	return w.Transport.Send(sctx, msg)
}

// backoff is BaseBackoff·2^(attempt-1), capped, with ±20% jitter so retries
// from many rows do not arrive together.
func (w *Worker) backoff(attempt int) time.Duration {
	d := w.BaseBackoff
	for i := 1; i < attempt && d < w.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, w.MaxBackoff)
	jitter := time.Duration((rand.Float64()*0.4 - 0.2) * float64(d))
	return d + jitter
}
