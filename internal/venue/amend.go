package venue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// AmendInput is the operator's request for revision n+1: absent members
// keep their current value; Participants are added.
type AmendInput struct {
	Title        *string            `json:"title"`
	Objective    *string            `json:"objective"`
	Rules        *[]string          `json:"rules"`
	Deadline     *string            `json:"deadline"`
	Participants []ParticipantInput `json:"participants"`
	// DecisionRule, when given, is the new revision's decision rule.
	DecisionRule json.RawMessage `json:"decisionRule,omitempty"`
}

// Amended is the operator's view of a new revision. It never carries a
// secret or a proof.
type Amended struct {
	AgreementID    string               `json:"agreementId"`
	RevisionNumber int                  `json:"revisionNumber"`
	RevisionDigest string               `json:"revisionDigest"`
	MarkdownDigest string               `json:"markdownDigest"`
	TermsDigest    string               `json:"termsDigest"`
	TermsChanged   bool                 `json:"termsChanged"`
	Changed        []string             `json:"changed"`
	Deadline       string               `json:"deadline"`
	Added          []CreatedParticipant `json:"added"`
	Notified       []Notified           `json:"notified"`
}

// Notified is an existing participant sent the revision notice.
type Notified struct {
	ParticipantID string `json:"participantId"`
	InvitationID  string `json:"invitationId"`
	Delivery      string `json:"delivery"`
}

// AmendAgreement locks revision n+1 of a pending agreement in
// one transaction under the agreement's lock: the new revision becomes
// current with its deadline (every invitation expires with it), added
// participants get their slots, invitations and emails, every participant's
// standing decision is recomputed for the new terms (room.History), the
// others who are not revoked are sent the notice, and the agreement's
// version moves so rooms and waiters see it. Errors: room.ErrNotFound,
// *room.ValidationError (input, or nothing would change), room.ErrRoomClosed
// when the outcome is final or the deadline has passed.
func (v *Venue) AmendAgreement(ctx context.Context, c OperatorCall, agreementID string, in AmendInput) (*Amended, error) {
	id, err := parseID(agreementID)
	if err != nil {
		return nil, err
	}
	now := canon.Now(v.now())
	var a room.Amendment
	a.Title, a.Objective, a.Rules = in.Title, in.Objective, in.Rules
	if in.Deadline != nil {
		d, err := room.ParseDeadline(*in.Deadline, now)
		if err != nil {
			return nil, err
		}
		a.Deadline = &d
	}
	if len(in.DecisionRule) > 0 {
		rule, err := room.ParseRule(in.DecisionRule)
		if err != nil {
			return nil, err
		}
		a.Rule = &rule
	}
	if in.Participants != nil && len(in.Participants) == 0 {
		return nil, &room.ValidationError{Field: "participants", Reason: "lists the participants to add: leave it out to add none"}
	}
	var out *Amended
	err = v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		out, a.Add = nil, nil // a retried transaction starts again
		ag, err := tx.AgreementLock(ctx, id)
		if err != nil {
			return err
		}
		if err := ownedBy(c, ag.WorkspaceID); err != nil {
			return err
		}
		if ag.Outcome.Final() || !now.Before(ag.Deadline) {
			return room.ErrRoomClosed
		}
		cur, err := tx.RevisionGet(ctx, id, ag.CurrentRevision)
		if err != nil {
			return err
		}
		var prev room.Revision
		if err := json.Unmarshal(cur.Canonical, &prev); err != nil {
			return err
		}
		parts, err := tx.ParticipantListByAgreement(ctx, id)
		if err != nil {
			return err
		}
		taken := map[string]bool{}
		for _, p := range parts {
			taken[p.Email] = true
		}
		slots, err := newSlots(in.Participants, taken)
		if err != nil {
			return err
		}
		for _, s := range slots {
			a.Add = append(a.Add, s.roomParticipant())
		}
		next, change, err := room.Amend(prev, a, now)
		if err != nil {
			return err
		}
		locked, err := room.Lock(next)
		if err != nil {
			return err
		}
		deadline, err := time.Parse(time.RFC3339, next.Deadline)
		if err != nil {
			return err
		}
		if out, err = v.lockRevision(ctx, tx, ag, locked, change, deadline, now); err != nil {
			return err
		}
		for i, s := range slots {
			p, err := v.insertSlot(ctx, tx, s, len(parts)+i, locked, deadline, now)
			if err != nil {
				return err
			}
			out.Added = append(out.Added, p)
		}
		if err := restand(ctx, tx, ag, locked); err != nil {
			return err
		}
		for _, p := range parts {
			if p.RevokedAt != nil {
				continue // its invitation and token no longer work
			}
			if err := v.queueNotice(ctx, tx, p, locked, change, now); err != nil {
				return err
			}
			out.Notified = append(out.Notified, Notified{ParticipantID: p.ID.String(), InvitationID: p.InvitationID.String(), Delivery: "queued"})
		}
		return v.audited(ctx, tx, c, ActionAgreementAmend, map[string]string{"agreementId": id.String()})
	})
	if err != nil {
		return nil, fmt.Errorf("venue: amend agreement: %w", err)
	}
	return out, nil
}

// lockRevision stores locked as the agreement's current revision with its
// deadline, and moves the invitations' expiry with it.
func (v *Venue) lockRevision(ctx context.Context, tx *store.Tx, ag store.Agreement, locked room.Locked, c room.Change, deadline, now time.Time) (*Amended, error) {
	r := locked.Revision
	if err := tx.RevisionInsert(ctx, store.Revision{
		AgreementID: ag.ID, Number: r.Revision, Canonical: locked.Canonical, Markdown: locked.Markdown,
		RevisionDigest: locked.RevisionDigest, MarkdownDigest: locked.MarkdownDigest, TermsDigest: locked.TermsDigest,
		LockedAt: now.Truncate(time.Second),
	}); err != nil {
		return nil, err
	}
	ok, err := tx.AgreementAmend(ctx, ag.ID, r.Revision, deadline)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, room.ErrRoomClosed
	}
	if c.Deadline {
		if err := tx.InvitationSetExpiry(ctx, ag.ID, deadline); err != nil {
			return nil, err
		}
	}
	return &Amended{
		AgreementID: ag.ID.String(), RevisionNumber: r.Revision, RevisionDigest: locked.RevisionDigest, MarkdownDigest: locked.MarkdownDigest,
		TermsDigest: locked.TermsDigest, TermsChanged: c.Terms, Changed: changedNames(c), Deadline: r.Deadline,
		Added: []CreatedParticipant{}, Notified: []Notified{},
	}, nil
}

// restand recomputes every participant's standing decision for the
// revision just locked, from the whole history of decisions, and stores
// those that differ from the stored one.
func restand(ctx context.Context, tx *store.Tx, ag store.Agreement, locked room.Locked) error {
	history, err := tx.RevisionList(ctx, ag.ID)
	if err != nil {
		return err
	}
	decisions, err := tx.EventTerminalList(ctx, ag.ID)
	if err != nil {
		return err
	}
	roster, err := tx.ParticipantRoster(ctx, ag.ID)
	if err != nil {
		return err
	}
	h := room.History{Current: locked.Revision.Revision, Terms: store.Terms(history), Events: decisions, Deadline: ag.Deadline}
	standings := h.Standings()
	for _, m := range roster {
		s, ok := standings[m.ID.String()]
		before, had := m.DecisionEvent()
		counted := had && m.State == "decided"
		if ok == had && (!ok || before.ID == s.Event.ID) && counted == (ok && !s.Stale) {
			continue
		}
		var d *room.Event
		if ok {
			d = &s.Event
		}
		if err := tx.ParticipantSetDecision(ctx, m.ID, d, ok && !s.Stale); err != nil {
			return err
		}
	}
	return nil
}

// changedNames lists what c changed, in the contract's words.
func changedNames(c room.Change) []string {
	var out []string
	for _, f := range []struct {
		on   bool
		name string
	}{{c.Title, "title"}, {c.Objective, "objective"}, {c.Rules, "rules"}, {c.Rule, "decisionRule"}, {c.Deadline, "deadline"}, {len(c.Added) > 0, "participants"}} {
		if f.on {
			out = append(out, f.name)
		}
	}
	return out
}
