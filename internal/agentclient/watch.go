package agentclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/ingest"
)

// WatchOptions tune Watch.
type WatchOptions struct {
	// Source yields the mailbox's unseen messages (IMAP or Maildir).
	Source ingest.Source
	// Exec, when set, is a program run after each claim and whenever a
	// pending room changes (see RunExec), except for a new revision that
	// kept the terms: a decision made earlier still counts, so the program
	// is not asked again.
	Exec string
	// ExecStderr receives the program's standard error; discarded when nil.
	ExecStderr io.Writer
	// RoomPoll is how often every claimed room is read anyway (default one
	// minute): changes arrive through each room's stream (or long polls,
	// see Client.Follow) at once, so this is only a safety net.
	RoomPoll time.Duration
	// Claimed, when set, is told about each new claim (tests, the demo).
	Claimed func(*Record)
	// Revised, when set, is told about each new revision once verified.
	Revised func(*RevisionChange)
	// UntilFinal ends Watch once at least one room is claimed and every
	// claimed room has a final outcome.
	UntilFinal bool
	// Inbox, when set, is the one address this watcher serves: an
	// invitation whose envelope names another inbox is left alone (unseen,
	// unclaimed), so watchers sharing one Maildir each take only their own.
	Inbox string
}

// LocalOrigin is the origin of a local run (make run): what --local pins.
const LocalOrigin = "http://localhost:8080"

// PersonError is a person's invitation (participant.kind human) met by the
// watcher: it is for a browser, and the agent routes refuse it.
type PersonError struct{ InvitationID, Inbox string }

func (e *PersonError) Error() string {
	return fmt.Sprintf("invitation %s (to %s) is for a person (participant.kind human): hand the email to them; an agent cannot claim it", e.InvitationID, e.Inbox)
}

// Watch ingests invitations until ctx ends: each message that passes the
// five checks is exchanged, verified and claimed, and marked \Seen only
// after the claim is saved. A message that fails a check (or whose
// exchange, verification or claim fails) is reported and left unseen, so a
// person can look at it; it is not retried until the next start. Each
// invitation is processed once: one already in the state is only marked
// seen. A person's invitation (participant.kind human) addressed to this
// watcher stops it with a *PersonError before any request. Watch returns nil
// when ctx ends.
func (a *Agent) Watch(ctx context.Context, opt WatchOptions) error {
	if opt.RoomPoll <= 0 {
		opt.RoomPoll = time.Minute
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kick := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Go(func() { a.execLoop(ctx, cancel, opt, kick) })
	defer wg.Wait()
	defer cancel()
	for {
		msgs, err := opt.Source.Fetch(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("agent: mailbox: %w", err)
		}
		for _, m := range msgs {
			rec, fresh, err := a.handle(ctx, opt, m)
			if err != nil {
				return err
			}
			if rec != nil && fresh && opt.Claimed != nil {
				opt.Claimed(rec)
			}
			if rec == nil || fresh {
				// a claim, or perhaps a revision notice: read the rooms now
				select {
				case kick <- struct{}{}:
				default:
				}
			}
		}
	}
}

// handle processes one message; it returns the record when one exists,
// and an error only when the watcher must stop.
func (a *Agent) handle(ctx context.Context, opt WatchOptions, m ingest.RawMessage) (*Record, bool, error) {
	src := opt.Source
	inv, err := ingest.ParseMessageBytes(m.Body, a.Policy)
	if err != nil {
		var ce *envelope.CheckError
		if errors.Is(err, ingest.ErrNoInvitation) {
			a.Log.Info("agent: not an invitation (a revision notice or other mail); left unseen; the rooms are read for new revisions", slog.String("message", m.ID))
		} else if errors.As(err, &ce) && ce.Check == envelope.CheckOrigin {
			a.Log.Warn("agent: message refused; left unseen", slog.String("message", m.ID), slog.String("check", ce.Check), slog.String("detail", ce.Detail),
				slog.String("hint", "its URLs are not on the pinned origin "+a.Policy.Origin+"; for a local server (make run) use --local, which is --origin "+LocalOrigin+" --allow-http-loopback"))
		} else if errors.As(err, &ce) {
			a.Log.Warn("agent: message refused; left unseen", slog.String("message", m.ID), slog.String("check", ce.Check), slog.String("detail", ce.Detail))
		} else {
			a.Log.Warn("agent: message unreadable; left unseen", slog.String("message", m.ID), slog.String("error", err.Error()))
		}
		return nil, false, nil
	}
	if opt.Inbox != "" && !strings.EqualFold(inv.Envelope.Inbox, opt.Inbox) {
		a.Log.Info("agent: an invitation for another inbox; left alone", slog.String("message", m.ID), slog.String("inbox", inv.Envelope.Inbox))
		return nil, false, nil
	}
	if inv.Envelope.Participant.Kind == "human" {
		return nil, false, &PersonError{InvitationID: inv.Envelope.InvitationID, Inbox: inv.Envelope.Inbox}
	}
	var rec *Record
	var fresh bool
	for attempt := 1; ; attempt++ {
		rec, fresh, err = a.Accept(ctx, inv)
		var ve *VerifyError
		if err == nil || errors.As(err, &ve) || definitive(err) || attempt == 3 || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt) * time.Second):
		}
	}
	if err != nil {
		a.Log.Warn("agent: invitation not claimed; left unseen", slog.Any("invitation", inv), slog.String("error", err.Error()))
		return nil, false, nil
	}
	if fresh {
		a.Log.Info("agent: claimed", slog.String("invitation_id", rec.InvitationID), slog.String("agreement_id", rec.AgreementID),
			slog.String("participant_id", rec.ParticipantID), slog.String("revision_digest", rec.RevisionDigest))
	}
	if err := src.MarkSeen(ctx, m.ID); err != nil {
		a.Log.Warn("agent: could not mark the message seen", slog.String("message", m.ID), slog.String("error", err.Error()))
	}
	return rec, fresh, nil
}

// execLoop reads every claimed room, verifying and reporting new
// revisions, and runs the program (when set) for every pending room whose
// state changed since the program last saw it.
func (a *Agent) execLoop(ctx context.Context, stop func(), opt WatchOptions, kick chan struct{}) {
	t := time.NewTicker(opt.RoomPoll)
	defer t.Stop()
	f := a.newFollowers(ctx, kick)
	defer f.stopAll()
	for {
		recs, err := a.State.List()
		if err != nil {
			a.Log.Warn("agent: state", slog.String("error", err.Error()))
		}
		final := len(recs) > 0
		for _, rec := range recs {
			if ctx.Err() != nil {
				return
			}
			status := a.execOnce(ctx, opt, rec)
			if status == "pending" || status == "" {
				final = false
				f.follow(rec)
			} else {
				f.stop(rec.InvitationID)
			}
		}
		if final && opt.UntilFinal {
			a.Log.Info("agent: every claimed room has a final outcome; stopping")
			stop()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-t.C:
		}
	}
}

// execOnce returns the room's outcome status ("" when it could not be read).
func (a *Agent) execOnce(ctx context.Context, opt WatchOptions, rec *Record) string {
	if _, err := a.Resume(ctx, rec.InvitationID); err != nil {
		a.Log.Warn("agent: pending command", slog.String("invitation_id", rec.InvitationID), slog.String("error", err.Error()))
		return ""
	}
	room, current, change, err := a.room(ctx, rec.InvitationID)
	if err != nil {
		a.Log.Warn("agent: room", slog.String("invitation_id", rec.InvitationID), slog.String("error", err.Error()))
		return ""
	}
	rec = current
	if change != nil && opt.Revised != nil {
		opt.Revised(change)
	}
	status := room.Outcome.Status
	if opt.Exec == "" || (room.ETag != "" && room.ETag == rec.LastRoomETag) {
		return status
	}
	rec.LastRoomETag = room.ETag
	if err := a.State.Save(rec); err != nil {
		a.Log.Warn("agent: state", slog.String("error", err.Error()))
		return status
	}
	if status != "pending" || (change != nil && !change.TermsChanged) {
		return status // final, or a revision that kept the terms: nothing to ask
	}
	cmd, err := RunExec(ctx, opt.Exec, room.Raw, rec, opt.ExecStderr)
	if err != nil {
		a.Log.Warn("agent: --exec program", slog.String("invitation_id", rec.InvitationID), slog.String("error", err.Error()))
		return status
	}
	if cmd.Action == "none" {
		return status
	}
	posted, err := a.post(ctx, rec.InvitationID, cmd.Action, cmd.Body, nil, rec.TermsDigest)
	if err != nil {
		a.Log.Warn("agent: --exec command not recorded", slog.String("invitation_id", rec.InvitationID), slog.String("action", cmd.Action), slog.String("error", err.Error()))
		return status
	}
	a.Log.Info("agent: --exec command recorded", slog.String("invitation_id", rec.InvitationID), slog.String("action", cmd.Action),
		slog.String("event_id", posted.Event.ID), slog.String("outcome", posted.Outcome.Status))
	a.sawOwnEvent(ctx, rec.InvitationID, posted.Event.Hash)
	return posted.Outcome.Status
}

// sawOwnEvent marks the room as the program has seen it when the only
// change since it ran is the command it just chose (the chain ends with
// that event): its own event is not news to ask it about. The stream
// announces that event at once, so without this the program would run
// again for it.
func (a *Agent) sawOwnEvent(ctx context.Context, invitationID, hash string) {
	room, rec, _, err := a.room(ctx, invitationID)
	if err != nil || room.ChainHead != hash {
		return
	}
	rec.LastRoomETag = room.ETag
	if err := a.State.Save(rec); err != nil {
		a.Log.Warn("agent: state", slog.String("error", err.Error()))
	}
}
