package room

import (
	"fmt"
	"time"
)

// model restates the terms, room and outcome rules from the spec's
// sentences, without the code under test:
//
//   - terms are labels; a revision's terms are equal to another's when the
//     labels are;
//   - a decision made on an earlier revision still counts on the current
//     one exactly when that revision's terms equal the current terms;
//     otherwise it is stale and the participant may decide again;
//   - a command must name the current revision; none is accepted once the
//     outcome is final or the deadline has passed; a participant whose
//     decision counts may not decide again;
//   - the outcome changes only at the moment something happens. Under
//     unanimity a required participant's disagreement makes it disagreed,
//     an abstention no_consensus, an agreement that leaves every required
//     participant with an agreement that counts makes it reached. Under a
//     quorum of k, a required participant's decision makes it reached when
//     k required participants hold an agreement that counts, and
//     disagreed when those agreements plus the required participants
//     without a decision that counts are fewer than k. The clock reaching
//     the deadline while pending makes it expired;
//   - the rule is part of the terms (the label includes it);
//   - blocking: while pending or expired, the required participants
//     without a decision that counts; once decided, those who decided it
//     (under a quorum: the agreements that reached it, or every
//     disagreement and abstention that put it out of reach).
type model struct {
	terms    string
	quorum   int // 0: unanimity
	deadline time.Time
	revTerms []string
	order    []string
	required map[string]bool
	claimed  map[string]bool
	decs     map[string][]Event
	outcome  Outcome
	trace    string
	// carried and staled count, over every revision locked, the decisions
	// that kept counting and those that became stale.
	carried, staled int
}

func newModel() *model {
	return &model{required: map[string]bool{}, claimed: map[string]bool{}, decs: map[string][]Event{}, outcome: Outcome{Status: StatusPending}}
}

func (m *model) final() bool { return m.outcome.Status != StatusPending }

func (m *model) add(id string, required bool) {
	m.order = append(m.order, id)
	m.required[id] = required
	m.trace += fmt.Sprintf(" add(%s,%v)", id, required)
}

func (m *model) claim(id string) {
	m.claimed[id] = true
	m.trace += " claim(" + id + ")"
}

// live is the participant's decision that counts on the current terms.
func (m *model) live(id string) *Event {
	for _, d := range m.decs[id] {
		if m.revTerms[d.Revision-1] == m.terms {
			return &d
		}
	}
	return nil
}

func (m *model) lock(terms string, quorum int, deadline time.Time) {
	for _, id := range m.order {
		if d := m.live(id); d != nil {
			if m.revTerms[d.Revision-1] == terms {
				m.carried++
			} else {
				m.staled++
			}
		}
	}
	m.revTerms = append(m.revTerms, terms)
	m.terms, m.quorum, m.deadline = terms, quorum, deadline
	m.trace += fmt.Sprintf(" revision(%d,%q,quorum %d,%s)", len(m.revTerms), terms, quorum, deadline.Format(time.RFC3339))
	if m.quorum == 0 && m.everyoneAgreed() || m.quorum > 0 && m.quorumVerdict() != StatusPending {
		panic("a revision decided the agreement by itself: " + m.trace)
	}
}

func (m *model) everyoneAgreed() bool {
	for _, id := range m.order {
		if d := m.live(id); m.required[id] && (d == nil || d.Action != ActionAgree) {
			return false
		}
	}
	return true
}

// quorumVerdict counts, over the required participants, the agreements
// that count and those who could still agree.
func (m *model) quorumVerdict() string {
	agreed, could := 0, 0
	for _, id := range m.order {
		if !m.required[id] {
			continue
		}
		switch d := m.live(id); {
		case d == nil:
			could++
		case d.Action == ActionAgree:
			agreed++
			could++
		}
	}
	switch {
	case agreed >= m.quorum:
		return StatusReached
	case could < m.quorum:
		return StatusDisagreed
	}
	return StatusPending
}

func (m *model) admit(id, action string, rev int, digestOK bool, now time.Time) error {
	m.trace += fmt.Sprintf(" %s(%s,rev %d)@%s", action, id, rev, now.Format("01-02T15:04"))
	switch {
	case rev != len(m.revTerms) || !digestOK:
		return ErrRevisionMismatch
	case m.final() || !now.Before(m.deadline):
		return ErrRoomClosed
	case IsTerminal(action) && m.live(id) != nil:
		return ErrAlreadyDecided
	}
	return nil
}

func (m *model) decide(e Event) {
	m.decs[e.ParticipantID] = append(m.decs[e.ParticipantID], e)
	if !m.required[e.ParticipantID] {
		return
	}
	if m.quorum > 0 {
		if v := m.quorumVerdict(); v != StatusPending {
			m.outcome = Outcome{Status: v, DecidedAt: e.CreatedAt, DecidingEventID: e.ID}
		}
		return
	}
	switch {
	case e.Action == ActionDisagree:
		m.outcome = Outcome{Status: StatusDisagreed, DecidedAt: e.CreatedAt, DecidingEventID: e.ID}
	case e.Action == ActionAbstain:
		m.outcome = Outcome{Status: StatusNoConsensus, DecidedAt: e.CreatedAt, DecidingEventID: e.ID}
	case m.everyoneAgreed():
		m.outcome = Outcome{Status: StatusReached, DecidedAt: e.CreatedAt, DecidingEventID: e.ID}
	}
}

func (m *model) tick(now time.Time) {
	if !m.final() && !now.Before(m.deadline) {
		m.outcome = Outcome{Status: StatusExpired, DecidedAt: m.deadline}
		m.trace += " expired"
	}
}

// standing is the decision the room shows: the one that counts, else the
// latest one made (on the highest revision), marked stale.
func (m *model) standing(id string) (Standing, bool) {
	if d := m.live(id); d != nil {
		return Standing{Event: *d}, true
	}
	var latest *Event
	for _, d := range m.decs[id] {
		if latest == nil || d.Revision > latest.Revision {
			latest = &d
		}
	}
	if latest == nil {
		return Standing{}, false
	}
	return Standing{Event: *latest, Stale: true}, true
}

func (m *model) blocking() []string {
	out := []string{}
	for _, id := range m.order {
		if !m.required[id] {
			continue
		}
		d := m.live(id)
		switch m.outcome.Status {
		case StatusPending, StatusExpired:
			if d != nil {
				continue
			}
			if s, ok := m.standing(id); ok {
				out = append(out, id+":"+ReasonStaleDecision+":"+s.Event.ID)
			} else if !m.claimed[id] {
				out = append(out, id+":"+ReasonNotClaimed)
			} else {
				out = append(out, id+":"+ReasonNoDecision)
			}
		case StatusReached:
			if d != nil && d.Action == ActionAgree {
				out = append(out, id+":"+ReasonDecided+":"+d.ID)
			}
		default:
			if m.quorum > 0 && m.outcome.Status == StatusDisagreed && d != nil && d.Action != ActionAgree {
				out = append(out, id+":"+ReasonDecided+":"+d.ID)
				continue
			}
			if d != nil && d.ID == m.outcome.DecidingEventID {
				out = append(out, id+":"+ReasonDecided+":"+d.ID)
			}
		}
	}
	return out
}
