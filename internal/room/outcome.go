package room

import (
	"sort"
	"time"
)

// Outcome statuses.
const (
	StatusPending     = "pending"
	StatusReached     = "reached"
	StatusDisagreed   = "disagreed"
	StatusNoConsensus = "no_consensus"
	StatusExpired     = "expired"
)

// Actions a participant can post.
const (
	ActionComment       = "comment"
	ActionQuestion      = "question"
	ActionChangeRequest = "change_request"
	ActionAgree         = "agree"
	ActionDisagree      = "disagree"
	ActionAbstain       = "abstain"
)

// IsTerminal reports whether action is a terminal decision.
func IsTerminal(action string) bool {
	return action == ActionAgree || action == ActionDisagree || action == ActionAbstain
}

// IsAdvisory reports whether action is an advisory event.
func IsAdvisory(action string) bool {
	return action == ActionComment || action == ActionQuestion || action == ActionChangeRequest
}

// Member is a roster entry as the decision rule sees it.
type Member struct {
	ID       string
	Required bool
	// Claimed reports that the slot was claimed; it only explains why a
	// required participant is blocking (not-claimed or no-decision).
	Claimed bool
}

// Event is a stored room event as the decision rule sees it.
type Event struct {
	ID            string
	Seq           int64
	ParticipantID string
	Revision      int
	Action        string
	CreatedAt     time.Time
	// Evidence is the canonical JSON of the reply email the event was
	// recorded from (record.Evidence), empty for an event posted over
	// HTTP. The rule never reads it; CONSENSUS.md states it.
	Evidence string
}

// Outcome is the state of the agreement. DecidedAt is zero and
// DecidingEventID empty while pending; an expired outcome has DecidedAt = the
// deadline and no deciding event.
type Outcome struct {
	Status          string
	DecidedAt       time.Time
	DecidingEventID string
}

// Final reports whether the outcome can no longer change.
func (o Outcome) Final() bool { return o.Status != StatusPending }

// Evaluate applies the decision rule unanimity-of-required to the events of
// revision rev alone, as on an agreement that was never amended: see
// History.Outcome. Only terminal events of required participants count; each
// participant's first terminal event is its decision. Events are taken in
// sequence order and the first terminal fact wins: a disagreement gives
// disagreed, an abstention no_consensus, the last missing agreement reached.
// Events at or after the deadline never count; if nothing final happened
// before it and now is at or past it, the outcome is expired.
func Evaluate(rev int, roster []Member, events []Event, deadline, now time.Time) Outcome {
	return History{Current: rev, Roster: roster, Events: events, Deadline: deadline}.Outcome(now)
}

// Decisions returns each participant's terminal decision on revision rev:
// its first terminal event in sequence order, whether required or not.
func Decisions(rev int, events []Event) map[string]Event {
	out := map[string]Event{}
	ordered := append([]Event(nil), events...)
	sort.Slice(ordered, func(i, j int) bool { return ordered[i].Seq < ordered[j].Seq })
	for _, e := range ordered {
		if e.Revision != rev || !IsTerminal(e.Action) {
			continue
		}
		if _, ok := out[e.ParticipantID]; !ok {
			out[e.ParticipantID] = e
		}
	}
	return out
}
