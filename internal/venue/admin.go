package venue

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/mail"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
)

// ErrNotResendable: the invitation's slot is revoked or its deadline passed.
var ErrNotResendable = errors.New("the invitation cannot be resent: its participant is revoked or its deadline has passed")

// AgreementSummary is one line of the operator's list.
type AgreementSummary struct {
	AgreementID    string      `json:"agreementId"`
	Title          string      `json:"title"`
	RevisionNumber int         `json:"revisionNumber"`
	Deadline       string      `json:"deadline"`
	CreatedAt      string      `json:"createdAt"`
	Outcome        OutcomeView `json:"outcome"`
}

// AgreementPage is a page of the operator's list, newest first.
type AgreementPage struct {
	Agreements []AgreementSummary `json:"agreements"`
	NextCursor *string            `json:"nextCursor"`
}

// Delivery is the state of one email to a participant (an invitation or a
// revision notice) and its attempts.
type Delivery struct {
	Kind          string    `json:"kind"`
	State         string    `json:"state"`
	Attempts      int       `json:"attempts"`
	LastReply     *string   `json:"lastReply"`
	MessageID     string    `json:"messageId"`
	QueuedAt      string    `json:"queuedAt"`
	NextAttemptAt *string   `json:"nextAttemptAt"`
	SentAt        *string   `json:"sentAt"`
	History       []Attempt `json:"history"`
}

// Attempt is one delivery attempt with the transport's reply.
type Attempt struct {
	Attempt     int    `json:"attempt"`
	AttemptedAt string `json:"attemptedAt"`
	OK          bool   `json:"ok"`
	Reply       string `json:"reply"`
}

// AdminParticipant is one slot as the operator sees it.
type AdminParticipant struct {
	ParticipantID string     `json:"participantId"`
	InvitationID  string     `json:"invitationId"`
	DisplayName   string     `json:"displayName"`
	Kind          string     `json:"kind"`
	Email         string     `json:"email"`
	Required      bool       `json:"required"`
	State         string     `json:"state"`
	Decision      *string    `json:"decision"`
	Revoked       bool       `json:"revoked"`
	Deliveries    []Delivery `json:"deliveries"`
}

// AgreementDetail is the operator's view of one agreement.
type AgreementDetail struct {
	AgreementSummary
	RevisionDigest string             `json:"revisionDigest"`
	MarkdownDigest string             `json:"markdownDigest"`
	DecisionRule   RuleView           `json:"decisionRule"`
	ChainHead      string             `json:"chainHead"`
	EventCount     int                `json:"eventCount"`
	Participants   []AdminParticipant `json:"participants"`
}

const maxPage = 100

// ListAgreements returns up to limit agreements older than cursor (opaque,
// from a previous page's nextCursor). A malformed cursor is a validation error.
func (v *Venue) ListAgreements(ctx context.Context, c OperatorCall, limit int, cursor string) (*AgreementPage, error) {
	page, _, err := v.listAgreements(ctx, c, limit, cursor)
	return page, err
}

// listAgreements is ListAgreements with the stored agreements the page
// shows (their versions included).
func (v *Venue) listAgreements(ctx context.Context, c OperatorCall, limit int, cursor string) (*AgreementPage, []store.Agreement, error) {
	if limit <= 0 || limit > maxPage {
		limit = 50
	}
	var before *store.AgreementKey
	if cursor != "" {
		t, id, err := decodeCursor(cursor)
		if err != nil {
			return nil, nil, err
		}
		before = &store.AgreementKey{CreatedAt: t, ID: id}
	}
	var rows []store.ListedAgreement
	err := v.inWorkspace(ctx, c, func(tx *store.Tx) (err error) {
		rows, err = tx.AgreementList(ctx, limit+1, before)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	page := &AgreementPage{Agreements: []AgreementSummary{}}
	var shown []store.Agreement
	for i, r := range rows {
		if i == limit {
			last := rows[limit-1]
			page.NextCursor = ptr(encodeCursor(last.CreatedAt, last.ID))
			break
		}
		var rev room.Revision
		if err := json.Unmarshal(r.Canonical, &rev); err != nil {
			return nil, nil, err
		}
		page.Agreements = append(page.Agreements, summary(r.Agreement, rev.Title, v.now()))
		shown = append(shown, r.Agreement)
	}
	return page, shown, nil
}

// summary shows the stored outcome, or expired once the deadline passed
// while pending (an operator read does not persist it).
func summary(a store.Agreement, title string, now time.Time) AgreementSummary {
	o := a.Outcome
	if !o.Final() && !now.Before(a.Deadline) {
		o = room.Outcome{Status: room.StatusExpired, DecidedAt: a.Deadline}
	}
	return AgreementSummary{AgreementID: a.ID.String(), Title: title, RevisionNumber: a.CurrentRevision,
		Deadline: canon.FormatSeconds(a.Deadline), CreatedAt: canon.FormatTime(a.CreatedAt), Outcome: outcomeView(o)}
}

func encodeCursor(t time.Time, id uuid.UUID) string {
	return base64.RawURLEncoding.EncodeToString([]byte(t.UTC().Format(time.RFC3339Nano) + "|" + id.String()))
}

func decodeCursor(c string) (time.Time, uuid.UUID, error) {
	bad := &room.ValidationError{Field: "cursor", Reason: "is not a cursor this service issued"}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, uuid.Nil, bad
	}
	ts, ids, ok := strings.Cut(string(raw), "|")
	t, err1 := time.Parse(time.RFC3339Nano, ts)
	id, err2 := uuid.Parse(ids)
	if !ok || err1 != nil || err2 != nil {
		return time.Time{}, uuid.Nil, bad
	}
	return t, id, nil
}

// GetAgreement returns the operator's view, or room.ErrNotFound.
func (v *Venue) GetAgreement(ctx context.Context, c OperatorCall, agreementID string) (*AgreementDetail, error) {
	read, err := v.readAgreement(ctx, c, agreementID, false)
	if err != nil {
		return nil, err
	}
	return v.agreementDetail(read)
}

// agreementRead is what the operator's view of an agreement is made of.
type agreementRead struct {
	a        store.Agreement
	rev      store.Revision // the current revision
	parts    []store.Participant
	invs     []store.Invitation
	mails    []store.OutboxMessage
	attempts []store.OutboxAttempt
	roster   []store.RosterMember
	console  *consoleRead // what the console shows beside, when asked
}

// readAgreement reads an agreement of the call's workspace for its
// operator's view, in one transaction; another workspace's is
// room.ErrNotFound.
// With console set it reads the console's additions too (consoleRead).
func (v *Venue) readAgreement(ctx context.Context, c OperatorCall, agreementID string, console bool) (*agreementRead, error) {
	id, err := parseID(agreementID)
	if err != nil {
		return nil, err
	}
	var r agreementRead
	err = v.inWorkspace(ctx, c, func(tx *store.Tx) (err error) {
		if r.a, err = tx.AgreementGet(ctx, id); err != nil {
			return err
		}
		if err := ownedBy(c, r.a.WorkspaceID); err != nil {
			return err
		}
		if r.rev, err = tx.RevisionGet(ctx, id, r.a.CurrentRevision); err != nil {
			return err
		}
		if r.rev.History, err = tx.RevisionList(ctx, id); err != nil {
			return err
		}
		if r.parts, err = tx.ParticipantListByAgreement(ctx, id); err != nil {
			return err
		}
		if r.invs, err = tx.InvitationListByAgreement(ctx, id); err != nil {
			return err
		}
		if r.mails, err = tx.OutboxListByAgreement(ctx, id); err != nil {
			return err
		}
		if r.attempts, err = tx.OutboxAttemptListByAgreement(ctx, id); err != nil {
			return err
		}
		if r.roster, err = tx.ParticipantRoster(ctx, id); err != nil || !console {
			return err
		}
		r.console, err = readConsole(ctx, tx, r.a)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// agreementDetail is the operator's view of what readAgreement read.
func (v *Venue) agreementDetail(r *agreementRead) (*AgreementDetail, error) {
	a, rev, parts, invs, mails, attempts, roster := r.a, r.rev, r.parts, r.invs, r.mails, r.attempts, r.roster
	var revision room.Revision
	if err := json.Unmarshal(rev.Canonical, &revision); err != nil {
		return nil, err
	}
	history := map[uuid.UUID][]Attempt{}
	for _, at := range attempts {
		history[at.OutboxID] = append(history[at.OutboxID], Attempt{Attempt: at.Attempt, AttemptedAt: canon.FormatTime(at.AttemptedAt), OK: at.OK, Reply: at.Reply})
	}
	rule, err := ruleOf(a, rev, roster)
	if err != nil {
		return nil, err
	}
	decisions := countedDecisions(rule)
	invByParticipant := map[uuid.UUID]uuid.UUID{}
	for _, inv := range invs {
		invByParticipant[inv.ParticipantID] = inv.ID
	}
	d := &AgreementDetail{AgreementSummary: summary(a, revision.Title, v.now()), RevisionDigest: rev.RevisionDigest,
		MarkdownDigest: rev.MarkdownDigest, DecisionRule: ruleView(rule), ChainHead: a.Head.Hash, EventCount: int(a.Head.Seq)}
	for _, p := range parts {
		ap := AdminParticipant{ParticipantID: p.ID.String(), InvitationID: invByParticipant[p.ID].String(), DisplayName: p.DisplayName,
			Kind: p.Kind, Email: p.Email, Required: p.Required, State: p.State, Revoked: p.RevokedAt != nil, Deliveries: []Delivery{}}
		if dec, ok := decisions[p.ID]; ok {
			ap.Decision = ptr(dec)
		}
		for _, m := range mails {
			if m.InvitationID != invByParticipant[p.ID] {
				continue
			}
			del := Delivery{Kind: m.Kind, State: m.State, Attempts: m.Attempts, LastReply: m.LastReply, MessageID: m.MessageID,
				QueuedAt: canon.FormatTime(m.CreatedAt), History: history[m.ID]}
			if del.History == nil {
				del.History = []Attempt{}
			}
			if m.SentAt != nil {
				del.SentAt = ptr(canon.FormatTime(*m.SentAt))
			}
			if m.State == store.OutboxQueued || m.State == store.OutboxRetrying {
				del.NextAttemptAt = ptr(canon.FormatTime(m.NextAttemptAt))
			}
			ap.Deliveries = append(ap.Deliveries, del)
		}
		d.Participants = append(d.Participants, ap)
	}
	return d, nil
}

// Revoked is the result of revoking a participant.
type Revoked struct {
	ParticipantID string `json:"participantId"`
	RevokedAt     string `json:"revokedAt"`
}

// RevokeParticipant makes the participant's token and invitation stop
// working at once, on every replica (each request reads revoked_at). It
// takes the agreement's row lock, which every write of an event or a claim
// holds while it checks its credential, so once it returns nothing more
// from the participant is stored: a write in flight either
// committed before or is refused. Its webhook is removed, with the
// deliveries still queued for it. It is a new version of the room.
// Revoking twice keeps the first time. Returns room.ErrNotFound.
func (v *Venue) RevokeParticipant(ctx context.Context, c OperatorCall, participantID string) (*Revoked, error) {
	id, err := parseID(participantID)
	if err != nil {
		return nil, err
	}
	now := canon.Now(v.now())
	var p store.Participant
	err = v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		a, err := tx.AgreementLockByParticipant(ctx, id)
		if err != nil {
			return err
		}
		if err := ownedBy(c, a.WorkspaceID); err != nil {
			return err
		}
		if p, err = tx.ParticipantRevoke(ctx, id, now); err != nil {
			return err
		}
		// Its webhook goes too, with what was queued for it: a revoked
		// participant hears nothing more of the room.
		if err := tx.WebhookDelete(ctx, id, now); err != nil && !errors.Is(err, room.ErrNotFound) {
			return err
		}
		if err := tx.AgreementBump(ctx, a.ID); err != nil {
			return err
		}
		return v.audited(ctx, tx, c, ActionParticipantRevoke, map[string]string{"agreementId": a.ID.String(), "participantId": id.String()})
	})
	if err != nil {
		return nil, err
	}
	return &Revoked{ParticipantID: p.ID.String(), RevokedAt: canon.FormatTime(*p.RevokedAt)}, nil
}

// Resent is the result of a resend.
type Resent struct {
	InvitationID string `json:"invitationId"`
	Delivery     string `json:"delivery"`
}

// ResendInvitation issues a fresh secret and proof (the previous email stops
// working), drops unsent older emails and queues a new one. Returns
// room.ErrNotFound or ErrNotResendable.
func (v *Venue) ResendInvitation(ctx context.Context, c OperatorCall, invitationID string) (*Resent, error) {
	id, err := parseID(invitationID)
	if err != nil {
		return nil, err
	}
	now := canon.Now(v.now())
	err = v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		inv, err := tx.InvitationGet(ctx, id)
		if err != nil {
			return err
		}
		ag, err := tx.AgreementLock(ctx, inv.AgreementID)
		if err != nil {
			return err
		}
		if err := ownedBy(c, ag.WorkspaceID); err != nil {
			return err
		}
		if inv.RevokedAt != nil || !now.Before(inv.ExpiresAt) {
			return ErrNotResendable
		}
		rev, err := tx.RevisionGet(ctx, inv.AgreementID, inv.CurrentRevision)
		if err != nil {
			return err
		}
		var revision room.Revision
		if err := json.Unmarshal(rev.Canonical, &revision); err != nil {
			return err
		}
		sec, proof := secret.NewInviteSecret(), secret.NewEmailProof()
		if err := tx.InvitationRotate(ctx, id, secret.Hash(sec), secret.Hash(proof), now); err != nil {
			return err
		}
		if err := tx.OutboxSupersede(ctx, id); err != nil {
			return err
		}
		env := mail.NewEnvelope(mail.InvitationInput{
			Origin: v.Origin, InvitationID: id.String(), AgreementID: inv.AgreementID.String(), ParticipantID: inv.ParticipantID.String(),
			Kind: inv.Kind, DisplayName: inv.DisplayName, Inbox: inv.Email, Title: revision.Title, Deadline: revision.Deadline,
			RevisionNumber: rev.Number, RevisionDigest: rev.RevisionDigest, Secret: sec, EmailProof: proof,
			DecisionRule: revision.DecisionRule.Words(room.RequiredCount(revision)),
		})
		if err := v.queueInvitation(ctx, tx, env, id, inv.AgreementID, now); err != nil {
			return err
		}
		return v.audited(ctx, tx, c, ActionInvitationResend, map[string]string{"agreementId": inv.AgreementID.String(), "invitationId": id.String()})
	})
	if err != nil {
		return nil, fmt.Errorf("venue: resend: %w", err)
	}
	return &Resent{InvitationID: id.String(), Delivery: "queued"}, nil
}
