package venue

import (
	"errors"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// RevisionSummaryView is one entry of the room's history of revisions.
type RevisionSummaryView struct {
	Number         int    `json:"number"`
	RevisionDigest string `json:"revisionDigest"`
	MarkdownDigest string `json:"markdownDigest"`
	TermsDigest    string `json:"termsDigest"`
	LockedAt       string `json:"lockedAt"`
}

// BlockerView is one participant of the room's blocking list.
type BlockerView struct {
	ParticipantID string  `json:"participantId"`
	DisplayName   string  `json:"displayName"`
	Reason        string  `json:"reason"`
	Decision      *string `json:"decision"`
	Revision      *int    `json:"revision"`
}

// RuleView is the decision rule as the room states it, with where it
// stands: how many agreements of required participants it needs in all,
// how many count now and how many more it needs. The blocking list (while
// pending) names who could give them.
type RuleView struct {
	Type                 string `json:"type"`
	Agree                int    `json:"agree"`
	RequiredParticipants int    `json:"requiredParticipants"`
	Statement            string `json:"statement"`
	Agreed               int    `json:"agreed"`
	AgreementsNeeded     int    `json:"agreementsNeeded"`
}

// ruleView states h's rule and its tally.
func ruleView(h room.History) RuleView {
	t := h.Tally()
	return RuleView{Type: h.Rule.Type(), Agree: t.Needed, RequiredParticipants: t.Required, Statement: h.Rule.Words(t.Required),
		Agreed: t.Agreed, AgreementsNeeded: t.Missing}
}

// errNoHistory: a revision was cached without the history of revisions the
// decision rule needs; a bug, never a state of the data.
var errNoHistory = errors.New("venue: the current revision was read without its history")

// ruleMember is a roster entry as ruleOf reads it: store.RuleMember, or
// store.RosterMember, which also knows whether the member claimed.
type ruleMember interface {
	Member() room.Member
	DecisionEvent() (room.Event, bool)
}

// ruleOf is the room as the decision rule reads it (room.History): the
// current revision, the terms digest of every revision, the roster and each
// member's standing decision. rev must carry its History.
func ruleOf[M ruleMember](a store.Agreement, rev store.Revision, roster []M) (room.History, error) {
	if len(rev.History) < rev.Number {
		return room.History{}, errNoHistory
	}
	rule, err := room.RuleOf(rev.Canonical)
	if err != nil {
		return room.History{}, err
	}
	h := room.History{Current: a.CurrentRevision, Terms: store.Terms(rev.History), Deadline: a.Deadline, Roster: make([]room.Member, len(roster)), Rule: rule}
	for i, m := range roster {
		h.Roster[i] = m.Member()
		if d, ok := m.DecisionEvent(); ok {
			h.Events = append(h.Events, d)
		}
	}
	return h, nil
}

// revisionsView is the room's history of revisions.
func revisionsView(history []store.RevisionSummary) []RevisionSummaryView {
	out := make([]RevisionSummaryView, len(history))
	for i, r := range history {
		out[i] = RevisionSummaryView{Number: r.Number, RevisionDigest: r.RevisionDigest, MarkdownDigest: r.MarkdownDigest,
			TermsDigest: r.TermsDigest, LockedAt: canon.FormatSeconds(r.LockedAt)}
	}
	return out
}

// rosterView is the roster as the room shows it: each member's standing
// decision with the revision it was made on, and whether it is stale.
func rosterView(h room.History, roster []store.RosterMember) []RosterEntry {
	st := h.Standings()
	out := make([]RosterEntry, len(roster))
	for i, m := range roster {
		out[i] = RosterEntry{ParticipantID: m.ID.String(), DisplayName: m.DisplayName, Kind: m.Kind, Required: m.Required, State: m.State}
		if s, ok := st[m.ID.String()]; ok {
			out[i].Decision, out[i].DecidedAt = ptr(s.Event.Action), ptr(canon.FormatTime(s.Event.CreatedAt))
			out[i].Revision, out[i].Stale = ptr(s.Event.Revision), s.Stale
		}
	}
	return out
}

// blockingView is the blocking list for outcome o, with display names.
func blockingView(h room.History, o room.Outcome, roster []store.RosterMember) []BlockerView {
	names := make(map[string]string, len(roster))
	for _, m := range roster {
		names[m.ID.String()] = m.DisplayName
	}
	out := []BlockerView{}
	for _, b := range h.Blocking(o) {
		v := BlockerView{ParticipantID: b.ParticipantID, DisplayName: names[b.ParticipantID], Reason: b.Reason}
		if b.Decision != nil {
			v.Decision, v.Revision = ptr(b.Decision.Action), ptr(b.Decision.Revision)
		}
		out = append(out, v)
	}
	return out
}

// countedDecisions maps each member to its decision that counts on the
// current revision; a stale one does not.
func countedDecisions(h room.History) map[uuid.UUID]string {
	out := map[uuid.UUID]string{}
	for id, s := range h.Standings() {
		if u, err := uuid.Parse(id); err == nil && !s.Stale {
			out[u] = s.Event.Action
		}
	}
	return out
}
