package venue

import (
	"time"

	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/mail"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// CreateInput is the operator's request body.
type CreateInput struct {
	Title        string             `json:"title"`
	Objective    string             `json:"objective"`
	Rules        []string           `json:"rules"`
	Deadline     string             `json:"deadline"`
	Participants []ParticipantInput `json:"participants"`
	// DecisionRule is "unanimity-of-required" (also when absent) or
	// {"type": "quorum", "agree": k}.
	DecisionRule json.RawMessage `json:"decisionRule,omitempty"`
	// Reminders are ISO 8601 durations before the deadline at which a
	// required participant who has not decided is reminded by email
	// (room.ParseReminders); absent: room.DefaultReminders; empty: none.
	Reminders []string `json:"reminders"`
}

// ParticipantInput is one invited participant.
type ParticipantInput struct {
	DisplayName string `json:"displayName"`
	Kind        string `json:"kind"`
	Email       string `json:"email"`
	Required    *bool  `json:"required"`
}

// Created is the operator's view of a new agreement. It never carries a
// secret or a proof: those exist only in the queued emails.
type Created struct {
	AgreementID    string `json:"agreementId"`
	RevisionNumber int    `json:"revisionNumber"`
	RevisionDigest string `json:"revisionDigest"`
	MarkdownDigest string `json:"markdownDigest"`
	Deadline       string `json:"deadline"`
	// Reminders are the agreement's reminder times, latest first.
	Reminders    []string             `json:"reminders"`
	Participants []CreatedParticipant `json:"participants"`
}

// CreatedParticipant names one slot and its invitation.
type CreatedParticipant struct {
	ParticipantID string `json:"participantId"`
	InvitationID  string `json:"invitationId"`
	DisplayName   string `json:"displayName"`
	Kind          string `json:"kind"`
	Email         string `json:"email"`
	Required      bool   `json:"required"`
	Delivery      string `json:"delivery"`
}

// Preview is a dry run of a creation: revision 1 as it would be locked,
// with its canonical bytes (whose SHA-256 is revisionDigest), its Markdown
// and digests. Nothing was stored. A real creation locks its revision with
// its own agreement id and time, so its digests differ from the preview's.
type Preview struct {
	DryRun         bool   `json:"dryRun"`
	RevisionNumber int    `json:"revisionNumber"`
	Canonical      string `json:"canonical"`
	Markdown       string `json:"markdown"`
	RevisionDigest string `json:"revisionDigest"`
	MarkdownDigest string `json:"markdownDigest"`
}

// PreviewAgreement validates the input as CreateAgreement does and returns
// the revision it would lock, storing nothing and writing no audit entry.
// It returns *room.ValidationError for bad input.
func (v *Venue) PreviewAgreement(in CreateInput) (*Preview, error) {
	p, err := v.prepareAgreement(in)
	if err != nil {
		return nil, err
	}
	return &Preview{DryRun: true, RevisionNumber: 1, Canonical: string(p.locked.Canonical), Markdown: p.locked.Markdown,
		RevisionDigest: p.locked.RevisionDigest, MarkdownDigest: p.locked.MarkdownDigest}, nil
}

// prepared is a checked creation: its revision 1 locked, not yet stored.
type prepared struct {
	agreementID   uuid.UUID
	now, deadline time.Time
	slots         []slot
	locked        room.Locked
	rev           room.Revision
	reminders     []time.Duration
}

// prepareAgreement checks the input and locks revision 1 in memory.
func (v *Venue) prepareAgreement(in CreateInput) (*prepared, error) {
	now := v.now()
	if in.Rules == nil {
		in.Rules = []string{}
	}
	if err := room.ValidateRevisionText(in.Title, in.Objective, in.Rules); err != nil {
		return nil, err
	}
	deadline, err := room.ParseDeadline(in.Deadline, now)
	if err != nil {
		return nil, err
	}
	if len(in.Participants) < 1 || len(in.Participants) > room.MaxParticipants {
		return nil, &room.ValidationError{Field: "participants", Reason: fmt.Sprintf("must list 1 to %d participants", room.MaxParticipants)}
	}
	rule, err := room.ParseRule(in.DecisionRule)
	if err != nil {
		return nil, err
	}
	reminders, err := room.ParseReminders(in.Reminders)
	if err != nil {
		return nil, err
	}
	agreementID := uuid.New()
	rev := room.Revision{
		Schema: fmt.Sprintf(room.AgreementSchemaFmt, v.Origin), AgreementID: agreementID.String(), Revision: 1,
		Title: in.Title, Objective: in.Objective, Rules: in.Rules, DecisionRule: rule,
		Deadline: canon.FormatSeconds(deadline), LockedAt: canon.FormatSeconds(now), Issuer: v.Origin,
	}
	slots, err := newSlots(in.Participants, map[string]bool{})
	if err != nil {
		return nil, err
	}
	anyRequired := false
	for _, sl := range slots {
		anyRequired = anyRequired || *sl.in.Required
		rev.Participants = append(rev.Participants, sl.roomParticipant())
	}
	if !anyRequired {
		return nil, &room.ValidationError{Field: "participants", Reason: "at least one participant must be required: the outcome is decided by the required participants"}
	}
	if err := rule.Validate(room.RequiredCount(rev)); err != nil {
		return nil, err
	}
	locked, err := room.Lock(rev)
	if err != nil {
		return nil, err
	}
	return &prepared{agreementID: agreementID, now: now, deadline: deadline, slots: slots, locked: locked, rev: rev, reminders: reminders}, nil
}

// CreateAgreement validates the input, locks revision 1, creates one
// invitation per participant and queues its email, all in one transaction.
// It returns *room.ValidationError for bad input.
func (v *Venue) CreateAgreement(ctx context.Context, c OperatorCall, in CreateInput) (*Created, error) {
	p, err := v.prepareAgreement(in)
	if err != nil {
		return nil, err
	}
	agreementID, now, deadline, slots, locked, rev := p.agreementID, p.now, p.deadline, p.slots, p.locked, p.rev
	out := &Created{AgreementID: agreementID.String(), RevisionNumber: 1, RevisionDigest: locked.RevisionDigest, MarkdownDigest: locked.MarkdownDigest, Deadline: rev.Deadline,
		Reminders: make([]string, len(p.reminders))}
	for i, d := range p.reminders {
		out.Reminders[i] = room.FormatReminder(d)
	}
	err = v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		out.Participants = nil // a retried transaction starts again
		if err := tx.AgreementInsert(ctx, agreementID, deadline, now); err != nil {
			return err
		}
		if in.Reminders != nil { // otherwise the stored default
			if err := tx.AgreementSetReminders(ctx, agreementID, deadline, p.reminders); err != nil {
				return err
			}
		}
		if err := tx.RevisionInsert(ctx, store.Revision{
			AgreementID: agreementID, Number: 1, Canonical: locked.Canonical, Markdown: locked.Markdown,
			RevisionDigest: locked.RevisionDigest, MarkdownDigest: locked.MarkdownDigest, TermsDigest: locked.TermsDigest, LockedAt: now.Truncate(time.Second),
		}); err != nil {
			return err
		}
		for i, s := range slots {
			p, err := v.insertSlot(ctx, tx, s, i, locked, deadline, now)
			if err != nil {
				return err
			}
			out.Participants = append(out.Participants, p)
		}
		return v.audited(ctx, tx, c, ActionAgreementCreate, map[string]string{"agreementId": agreementID.String()})
	})
	if err != nil {
		return nil, fmt.Errorf("venue: create agreement: %w", err)
	}
	return out, nil
}

// queueInvitation seals the email body (it holds the secret and the proof)
// under the server key and inserts it into the outbox in tx.
func (v *Venue) queueInvitation(ctx context.Context, tx *store.Tx, env envelope.Envelope, invitationID, agreementID uuid.UUID, now time.Time) error {
	body, err := v.invitationBody(env)
	if err != nil {
		return err
	}
	id := uuid.New()
	return tx.OutboxInsert(ctx, store.OutboxMessage{
		ID: id, InvitationID: invitationID, AgreementID: agreementID, Recipient: env.Inbox,
		Subject: mail.InvitationSubject(env.Title), MessageID: id.String() + "@" + originHost(v.Origin),
		SealedBody: v.Keys.Seal([]byte(body), id[:]), CreatedAt: now,
	})
}

func originHost(origin string) string {
	h := origin[strings.Index(origin, "://")+3:]
	if i := strings.LastIndex(h, ":"); i > 0 && !strings.HasSuffix(h, "]") {
		h = h[:i]
	}
	return strings.Trim(h, "[]")
}
