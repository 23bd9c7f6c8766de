package room

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

var (
	t0       = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	deadline = t0.Add(24 * time.Hour)
)

func ev(seq int64, who, action string) Event {
	return Event{ID: fmt.Sprintf("e%d", seq), Seq: seq, ParticipantID: who, Revision: 1, Action: action, CreatedAt: t0.Add(time.Duration(seq) * time.Minute)}
}

func TestEvaluateTable(t *testing.T) {
	t.Parallel()
	ab := []Member{{ID: "a", Required: true}, {ID: "b", Required: true}}
	abo := append(append([]Member(nil), ab...), Member{ID: "o", Required: false})
	cases := []struct {
		name   string
		roster []Member
		events []Event
		now    time.Time
		status string
		event  string
	}{
		{"silence is pending", ab, nil, t0, StatusPending, ""},
		{"silence past the deadline expires", ab, nil, deadline, StatusExpired, ""},
		{"one of two agreed", ab, []Event{ev(1, "a", ActionAgree)}, t0, StatusPending, ""},
		{"both agree", ab, []Event{ev(1, "a", ActionAgree), ev(2, "b", ActionAgree)}, t0, StatusReached, "e2"},
		{"comments do not decide", ab, []Event{ev(1, "a", ActionComment), ev(2, "b", ActionQuestion), ev(3, "a", ActionChangeRequest)}, t0, StatusPending, ""},
		{"one disagree", ab, []Event{ev(1, "a", ActionAgree), ev(2, "b", ActionDisagree)}, t0, StatusDisagreed, "e2"},
		{"one abstain", ab, []Event{ev(1, "a", ActionAbstain), ev(2, "b", ActionAgree)}, t0, StatusNoConsensus, "e1"},
		{"first terminal fact wins", ab, []Event{ev(2, "b", ActionAbstain), ev(1, "a", ActionDisagree)}, t0, StatusDisagreed, "e1"},
		{"optional disagree ignored", abo, []Event{ev(1, "o", ActionDisagree), ev(2, "a", ActionAgree), ev(3, "b", ActionAgree)}, t0, StatusReached, "e3"},
		{"optional silence ignored", abo, []Event{ev(1, "a", ActionAgree), ev(2, "b", ActionAgree)}, t0, StatusReached, "e2"},
		{"optional abstain ignored", abo, []Event{ev(1, "o", ActionAbstain)}, t0, StatusPending, ""},
		{"second terminal of a participant ignored", ab, []Event{ev(1, "a", ActionAgree), ev(2, "a", ActionDisagree), ev(3, "b", ActionAgree)}, t0, StatusReached, "e3"},
		{"stale revision ignored", ab, []Event{{ID: "x", Seq: 1, ParticipantID: "a", Revision: 0, Action: ActionDisagree, CreatedAt: t0}}, t0, StatusPending, ""},
		{"event at the deadline does not count", ab, []Event{ev(1, "a", ActionAgree), {ID: "late", Seq: 2, ParticipantID: "b", Revision: 1, Action: ActionAgree, CreatedAt: deadline}}, deadline, StatusExpired, ""},
		{"unknown participant ignored", ab, []Event{ev(1, "z", ActionDisagree)}, t0, StatusPending, ""},
		{"reached stays reached after the deadline", ab, []Event{ev(1, "a", ActionAgree), ev(2, "b", ActionAgree)}, deadline.Add(time.Hour), StatusReached, "e2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Evaluate(1, c.roster, c.events, deadline, c.now)
			if got.Status != c.status || got.DecidingEventID != c.event {
				t.Fatalf("got %+v, want %s by %q", got, c.status, c.event)
			}
			switch {
			case got.Status == StatusExpired && !got.DecidedAt.Equal(deadline):
				t.Fatalf("expired at %v, want the deadline", got.DecidedAt)
			case got.Status == StatusPending && !got.DecidedAt.IsZero():
				t.Fatalf("pending with a decision time")
			}
		})
	}
}

// TestEvaluateExhaustive walks every roster of three members (each required
// or optional), every decision of each (agree, disagree, abstain, silence)
// and every order, and checks the result against the rule as the spec
// states it, written independently of Evaluate.
func TestEvaluateExhaustive(t *testing.T) {
	t.Parallel()
	ids := []string{"p", "q", "r"}
	choices := []string{"", ActionAgree, ActionDisagree, ActionAbstain}
	perms := [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	n := 0
	for mask := 0; mask < 8; mask++ {
		roster := make([]Member, 3)
		for i := range roster {
			roster[i] = Member{ID: ids[i], Required: mask&(1<<i) != 0}
		}
		for c := 0; c < 64; c++ {
			decision := []string{choices[c%4], choices[(c/4)%4], choices[(c/16)%4]}
			for _, perm := range perms {
				var events []Event
				seq := int64(0)
				for _, i := range perm {
					if decision[i] != "" {
						seq++
						events = append(events, ev(seq, ids[i], decision[i]))
					}
				}
				for _, now := range []time.Time{t0.Add(time.Hour), deadline} {
					n++
					got := Evaluate(1, roster, events, deadline, now)
					want := oracle(roster, events, now)
					if got.Status != want.Status || got.DecidingEventID != want.DecidingEventID {
						t.Fatalf("roster %v events %v now %v: got %+v want %+v", roster, events, now, got, want)
					}
				}
			}
		}
	}
	if n != 8*64*6*2 {
		t.Fatalf("ran %d cases", n)
	}
}

// oracle restates the outcome rule directly.
func oracle(roster []Member, events []Event, now time.Time) Outcome {
	req := map[string]bool{}
	for _, m := range roster {
		if m.Required {
			req[m.ID] = true
		}
	}
	// events are already in seq order and one per participant here
	agreed := 0
	for _, e := range events {
		if !req[e.ParticipantID] {
			continue
		}
		if e.Action == ActionDisagree {
			return Outcome{Status: StatusDisagreed, DecidingEventID: e.ID}
		}
		if e.Action == ActionAbstain {
			return Outcome{Status: StatusNoConsensus, DecidingEventID: e.ID}
		}
		agreed++
		if agreed == len(req) {
			return Outcome{Status: StatusReached, DecidingEventID: e.ID}
		}
	}
	if !now.Before(deadline) {
		return Outcome{Status: StatusExpired}
	}
	return Outcome{Status: StatusPending}
}

// TestOutcomeNeverChangesOnceFinal appends random events one by one with a
// clock that only moves forward: once an evaluation is final, every later
// evaluation returns the same outcome.
func TestOutcomeNeverChangesOnceFinal(t *testing.T) {
	t.Parallel()
	actions := []string{ActionComment, ActionQuestion, ActionChangeRequest, ActionAgree, ActionDisagree, ActionAbstain}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 3000; trial++ {
		size := 1 + rng.IntN(5)
		roster := make([]Member, size)
		for i := range roster {
			roster[i] = Member{ID: fmt.Sprintf("m%d", i), Required: rng.IntN(3) != 0}
		}
		var events []Event
		var final *Outcome
		now := t0
		for step := 0; step < 20; step++ {
			now = now.Add(time.Duration(rng.IntN(240)) * time.Minute)
			events = append(events, Event{
				ID: fmt.Sprintf("e%d", step), Seq: int64(step + 1), ParticipantID: roster[rng.IntN(size)].ID,
				Revision: 1, Action: actions[rng.IntN(len(actions))], CreatedAt: now,
			})
			got := Evaluate(1, roster, events, deadline, now)
			if final != nil && got != *final {
				t.Fatalf("trial %d: outcome changed from %+v to %+v", trial, *final, got)
			}
			if final == nil && got.Final() {
				o := got
				final = &o
			}
		}
	}
}

func TestDecisionsFirstTerminalPerParticipant(t *testing.T) {
	t.Parallel()
	d := Decisions(1, []Event{ev(3, "a", ActionDisagree), ev(1, "a", ActionComment), ev(2, "a", ActionAgree), ev(4, "b", ActionAbstain)})
	if d["a"].ID != "e2" || d["b"].ID != "e4" || len(d) != 2 {
		t.Fatalf("%+v", d)
	}
}
