package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/mail"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// An outcome email and a reminder carry no secret, so the store queues
// them without a body (in the transaction that makes the outcome final,
// or the reminder sweep's): the worker writes each when it sends it, from
// the agreement as it stands. An outcome is final and its record fixed,
// so every attempt writes the same text. A reminder is sent only while it
// is still due.

// notice is the body and attachments of an outcome email or a reminder;
// drop, when set, says why the message is no longer to be sent.
type notice struct {
	body        string
	attachments []mail.Attachment
	drop        string
}

// errNoticeData marks stored data a notice cannot be written from: a
// retry cannot help.
var errNoticeData = errors.New("outbox: the agreement's data cannot be read for the notice")

// composeNotice writes the notice m stands for, at now.
func (w *Worker) composeNotice(ctx context.Context, m store.OutboxMessage, now time.Time) (notice, error) {
	a, err := w.Store.AgreementGet(ctx, m.AgreementID)
	if err != nil {
		return notice{}, err
	}
	rev, err := w.Store.RevisionGet(ctx, a.ID, a.CurrentRevision)
	if err != nil {
		return notice{}, err
	}
	var terms struct {
		Title string `json:"title"`
	}
	if err := json.Unmarshal(rev.Canonical, &terms); err != nil {
		return notice{}, fmt.Errorf("%w: %v", errNoticeData, err)
	}
	roster, err := w.Store.ParticipantRoster(ctx, a.ID)
	if err != nil {
		return notice{}, err
	}
	var me *store.RosterMember
	for i := range roster {
		if roster[i].ID == m.ParticipantID {
			me = &roster[i]
			break
		}
	}
	if me == nil {
		return notice{}, fmt.Errorf("%w: the recipient is not on the roster", errNoticeData)
	}
	if m.Kind == store.OutboxReminder {
		return w.reminder(a, rev, terms.Title, *me, m, now), nil
	}
	in := mail.OutcomeInput{
		Origin: w.Origin, Title: terms.Title, AgreementID: a.ID.String(), Status: a.Outcome.Status,
		DecidedAt: canon.FormatTime(a.Outcome.DecidedAt), RevisionNumber: rev.Number, RevisionDigest: rev.RevisionDigest,
		Kind: me.Kind, RecordURL: agentroute.For(w.Origin, m.InvitationID.String()).Record,
	}
	for _, p := range roster {
		line := mail.DecisionLine{Name: p.DisplayName, Kind: p.Kind, Required: p.Required, Revoked: p.RevokedAt != nil, Counts: p.State == "decided"}
		if d := p.Decision; d != nil {
			line.Action, line.Revision = d.Action, d.Revision
		}
		in.Decisions = append(in.Decisions, line)
	}
	var n notice
	if a.Outcome.Status == room.StatusReached {
		art, err := w.Store.ArtifactGet(ctx, a.ID)
		if err != nil {
			return notice{}, err
		}
		in.ArtifactSHA256 = art.SHA256
		n.attachments = []mail.Attachment{{Name: mail.ArtifactName, ContentType: mail.ArtifactType, Body: art.Body}}
	}
	n.body = mail.OutcomeBody(in)
	return n, nil
}

// reminder writes reminder m to member me, or says why it is no longer
// due: no reminder follows a decision, a revocation or a final outcome.
func (w *Worker) reminder(a store.Agreement, rev store.Revision, title string, me store.RosterMember, m store.OutboxMessage, now time.Time) notice {
	switch {
	case a.Outcome.Final():
		return notice{drop: "not sent: the outcome became final first"}
	case !now.Before(a.Deadline):
		return notice{drop: "not sent: the deadline passed first"}
	case me.RevokedAt != nil:
		return notice{drop: "not sent: the participant was revoked"}
	case me.State == "decided":
		return notice{drop: "not sent: the participant decided"}
	}
	return notice{body: mail.ReminderBody(mail.ReminderInput{
		Origin: w.Origin, Title: title, AgreementID: a.ID.String(), Deadline: canon.FormatSeconds(a.Deadline),
		Left: timeLeft(a.Deadline.Sub(now)), RevisionNumber: rev.Number, RevisionDigest: rev.RevisionDigest,
		Kind: me.Kind, RoomURL: agentroute.For(w.Origin, m.InvitationID.String()).Room,
		Reply: w.ReplyAddress != "" && m.InvitationID != uuid.Nil,
	})}
}

// timeLeft says d in whole hours, or minutes under two hours, rounded.
func timeLeft(d time.Duration) string {
	if d >= 2*time.Hour {
		return fmt.Sprintf("about %d hours", int((d+30*time.Minute)/time.Hour))
	}
	minutes := max(1, int((d+30*time.Second)/time.Minute))
	if minutes == 1 {
		return "about a minute"
	}
	return fmt.Sprintf("about %d minutes", minutes)
}
