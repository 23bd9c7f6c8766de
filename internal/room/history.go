package room

import (
	"sort"
	"time"
)

// History is what the decision rule reads about an agreement that may have
// been amended: the revision in force, the terms digest of each locked
// revision, the roster and the participants' terminal events on any
// revision (advisory events are ignored).
//
// The rule: a terminal decision counts on the
// current revision exactly when it was made on a revision whose terms digest
// equals the current one (the current revision itself included); a
// participant's counting decision is its first such event, and is never
// changed. Any other decision is stale: shown, never counted, and the
// participant may decide again. Only the counting decisions of required
// participants, made before the deadline, decide the outcome, first
// terminal fact wins, exactly as on a single revision.
type History struct {
	// Current is the number of the revision in force.
	Current int
	// Terms maps each locked revision's number to its terms digest. A
	// revision missing from it shares its terms with no other revision, so
	// a nil map counts only decisions made on Current.
	Terms    map[int]string
	Roster   []Member
	Events   []Event
	Deadline time.Time
	// Rule is the current revision's decision rule (the zero value:
	// unanimity of the required participants).
	Rule Rule
}

// Standing is a participant's decision as the current revision sees it.
type Standing struct {
	// Event is the decision that counts or, when none does, the latest one
	// made (the first terminal event on the highest revision decided on).
	Event Event
	// Stale reports that Event was made on a revision whose terms differ
	// from the current ones: it does not count, and the participant may
	// decide again on the current revision.
	Stale bool
}

// sameTerms reports whether a decision made on revision rev counts on the
// current revision.
func (h History) sameTerms(rev int) bool {
	if rev == h.Current {
		return true
	}
	if rev > h.Current {
		return false
	}
	cur, ok := h.Terms[h.Current]
	t, known := h.Terms[rev]
	return ok && known && t == cur
}

// Standings returns the standing decision of every participant that made a
// terminal decision on the current or an earlier revision, by participant id.
func (h History) Standings() map[string]Standing {
	out := map[string]Standing{}
	for _, e := range bySeq(h.Events) {
		if !IsTerminal(e.Action) || e.Revision > h.Current {
			continue
		}
		same := h.sameTerms(e.Revision)
		s, seen := out[e.ParticipantID]
		switch {
		case !seen:
			out[e.ParticipantID] = Standing{Event: e, Stale: !same}
		case s.Stale && same:
			// the first decision that counts replaces any stale one
			out[e.ParticipantID] = Standing{Event: e}
		case s.Stale && e.Revision > s.Event.Revision:
			// no decision counts yet: show the latest one
			out[e.ParticipantID] = Standing{Event: e, Stale: true}
		}
	}
	return out
}

// counted returns, in sequence order, the decisions that decide the
// outcome: each required participant's counting decision, if made before
// the deadline.
func (h History) counted(st map[string]Standing) []Event {
	var out []Event
	for _, m := range h.Roster {
		s, ok := st[m.ID]
		if m.Required && ok && !s.Stale && s.Event.CreatedAt.Before(h.Deadline) {
			out = append(out, s.Event)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

// Outcome applies the decision rule over the counting decisions, in
// sequence order, first terminal fact wins. Under unanimity a disagreement
// gives disagreed, an abstention no_consensus, the last missing agreement
// reached. Under a quorum of k the k-th agreement gives reached, and the
// decision (a disagreement or an abstention: neither can become an
// agreement) after which fewer than k required participants could still
// agree gives disagreed. If none of these happened and now is at or past
// the deadline, the outcome is expired (DecidedAt = the deadline).
func (h History) Outcome(now time.Time) Outcome {
	required := h.required()
	if h.Rule.IsQuorum() {
		return h.quorum(required, now)
	}
	agreed := 0
	for _, e := range h.counted(h.Standings()) {
		switch e.Action {
		case ActionDisagree:
			return Outcome{Status: StatusDisagreed, DecidedAt: e.CreatedAt, DecidingEventID: e.ID}
		case ActionAbstain:
			return Outcome{Status: StatusNoConsensus, DecidedAt: e.CreatedAt, DecidingEventID: e.ID}
		case ActionAgree:
			if agreed++; agreed == required {
				return Outcome{Status: StatusReached, DecidedAt: e.CreatedAt, DecidingEventID: e.ID}
			}
		}
	}
	return h.expiry(now)
}

// quorum is Outcome under a quorum rule: the counting decisions are read
// in sequence order, and after each one the agreements so far and the
// required participants still without a counting decision (silent, or
// holding only a stale one) say whether k is reached or out of reach.
func (h History) quorum(required int, now time.Time) Outcome {
	k := h.Rule.Agree
	agreed, open := 0, required
	for _, e := range h.counted(h.Standings()) {
		open--
		if e.Action == ActionAgree {
			agreed++
		}
		switch {
		case agreed >= k:
			return Outcome{Status: StatusReached, DecidedAt: e.CreatedAt, DecidingEventID: e.ID}
		case agreed+open < k:
			return Outcome{Status: StatusDisagreed, DecidedAt: e.CreatedAt, DecidingEventID: e.ID}
		}
	}
	return h.expiry(now)
}

// expiry is the outcome when no decision settled it: expired at or past
// the deadline, pending before.
func (h History) expiry(now time.Time) Outcome {
	if !now.Before(h.Deadline) {
		return Outcome{Status: StatusExpired, DecidedAt: h.Deadline}
	}
	return Outcome{Status: StatusPending}
}

// required is the number of required participants on the roster.
func (h History) required() int {
	n := 0
	for _, m := range h.Roster {
		if m.Required {
			n++
		}
	}
	return n
}

// Tally is where the decision rule stands: how many agreements it needs
// in all, how many required participants have a counting agreement, and
// how many more agreements it needs (0 once it has them).
type Tally struct {
	Required int
	Needed   int
	Agreed   int
	Missing  int
}

// Tally counts the required participants' counting agreements.
func (h History) Tally() Tally {
	t := Tally{Required: h.required()}
	t.Needed = h.Rule.Needed(t.Required)
	for _, e := range h.counted(h.Standings()) {
		if e.Action == ActionAgree {
			t.Agreed++
		}
	}
	t.Missing = max(0, t.Needed-t.Agreed)
	return t
}

// bySeq returns a copy of events in sequence order.
func bySeq(events []Event) []Event {
	out := append([]Event(nil), events...)
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}
