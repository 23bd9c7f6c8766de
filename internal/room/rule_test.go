package room

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/canon"
)

func TestRuleJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rule Rule
		want string
	}{{DecisionRule, `"unanimity-of-required"`}, {Quorum(2), `{"agree":2,"type":"quorum"}`}} {
		b, err := canon.Marshal(c.rule)
		if err != nil || string(b) != c.want {
			t.Fatalf("%v: %s %v, want %s", c.rule, b, err, c.want)
		}
		var back Rule
		if err := json.Unmarshal(b, &back); err != nil || back != c.rule {
			t.Fatalf("%s read back as %v %v", b, back, err)
		}
	}
	if err := json.Unmarshal([]byte(`{"type":"quorum","agree":3}`), new(Rule)); err != nil {
		t.Fatalf("members in another order: %v", err)
	}
	for _, bad := range []string{`"majority"`, `""`, `null`, `{}`, `{"type":"quorum"}`, `{"type":"quorum","agree":0}`, `{"type":"quorum","agree":51}`,
		`{"type":"quorum","agree":2.0}`, `{"type":"quorum","agree":2e0}`, `{"type":"quorum","agree":"2"}`, `{"type":"majority","agree":2}`,
		`{"type":"quorum","agree":2,"of":3}`, `2`, `["quorum",2]`} {
		var r Rule
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("%s was accepted as %v", bad, r)
		}
	}
}

func TestParseRule(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]Rule{"": DecisionRule, ` "unanimity-of-required" `: DecisionRule, `{"type":"quorum","agree":2}`: Quorum(2)} {
		if r, err := ParseRule(json.RawMessage(raw)); err != nil || r != want {
			t.Errorf("%q: %v %v, want %v", raw, r, err, want)
		}
	}
	var verr *ValidationError
	for _, bad := range []string{`{"type":"quorum","agree":0}`, `null`} {
		if _, err := ParseRule(json.RawMessage(bad)); !errors.As(err, &verr) || verr.Field != "decisionRule" {
			t.Fatalf("%s: %v", bad, err)
		}
	}
	if err := Quorum(4).Validate(3); !errors.As(err, &verr) || verr.Field != "decisionRule" {
		t.Fatalf("4 of 3: %v", err)
	}
	if Quorum(3).Validate(3) != nil || DecisionRule.Validate(1) != nil {
		t.Fatal("a quorum of every required participant, or unanimity, was refused")
	}
}

func TestRuleWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rule     Rule
		required int
		want     string
	}{
		{Quorum(2), 3, "2 of the 3 required participants must agree"},
		{Quorum(1), 1, "1 of the 1 required participant must agree"},
		{DecisionRule, 3, "all 3 required participants must agree"},
		{DecisionRule, 1, "the 1 required participant must agree"},
	} {
		if got := c.rule.Words(c.required); got != c.want {
			t.Errorf("%v of %d: %q, want %q", c.rule, c.required, got, c.want)
		}
	}
}

// TestUnanimityBytesUnchanged: a unanimity revision's canonical bytes and
// Markdown are what they were before rules other than unanimity existed.
func TestUnanimityBytesUnchanged(t *testing.T) {
	t.Parallel()
	l, err := Lock(sampleRevision())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(l.Canonical), `"decision_rule":"unanimity-of-required"`) || !strings.Contains(l.Markdown, "- Decision rule: unanimity-of-required\n") {
		t.Fatalf("unanimity is written differently:\n%s\n%s", l.Canonical, l.Markdown)
	}
	q := sampleRevision()
	q.DecisionRule = Quorum(1)
	lq, err := Lock(q)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(lq.Canonical), `"decision_rule":{"agree":1,"type":"quorum"}`) ||
		!strings.Contains(lq.Markdown, "- Decision rule: quorum: 1 of the ") || lq.TermsDigest == l.TermsDigest {
		t.Fatalf("quorum revision:\n%s\n%s", lq.Canonical, lq.Markdown)
	}
	if r, err := RuleOf(lq.Canonical); err != nil || r != Quorum(1) {
		t.Fatalf("RuleOf: %v %v", r, err)
	}
	if r, err := RuleOf(l.Canonical); err != nil || r != DecisionRule {
		t.Fatalf("RuleOf: %v %v", r, err)
	}
	// Text that is not canonical is read member by member; a title holding
	// the member's name is text, never the member.
	for text, want := range map[string]Rule{
		`{"title": "\"decision_rule\":{\"agree\":1,\"type\":\"quorum\"}", "decision_rule" : {"type": "quorum", "agree": 3}}`: Quorum(3),
		`{"a": 1, "decision_rule":"unanimity-of-required"}`:                                                                  DecisionRule,
	} {
		if r, err := RuleOf([]byte(text)); err != nil || r != want {
			t.Errorf("RuleOf(%s): %v %v, want %v", text, r, err, want)
		}
	}
	for _, bad := range []string{`{"title":"x"}`, `{"decision_rule":"majority"}`, `{"decision_rule":{"agree":0,"type":"quorum"}}`, `[]`} {
		if _, err := RuleOf([]byte(bad)); err == nil {
			t.Errorf("RuleOf(%s) read a rule", bad)
		}
	}
}

func TestQuorumOutcomeTable(t *testing.T) {
	t.Parallel()
	abc := []Member{{ID: "a", Required: true, Claimed: true}, {ID: "b", Required: true, Claimed: true}, {ID: "c", Required: true}}
	abco := append(append([]Member(nil), abc...), Member{ID: "o", Claimed: true})
	late := ev(9, "b", ActionAgree)
	late.CreatedAt = deadline
	cases := []struct {
		name   string
		k      int
		roster []Member
		events []Event
		now    time.Time
		status string
		event  string
		need   int
	}{
		{"silence is pending", 2, abc, nil, t0, StatusPending, "", 2},
		{"2 of 3 reached while the third is silent", 2, abc, []Event{ev(1, "a", ActionAgree), ev(2, "b", ActionAgree)}, t0, StatusReached, "e2", 0},
		{"one disagree leaves 2 of 3 reachable", 2, abc, []Event{ev(1, "a", ActionDisagree)}, t0, StatusPending, "", 2},
		{"two disagree put 2 of 3 out of reach", 2, abc, []Event{ev(1, "a", ActionDisagree), ev(2, "b", ActionDisagree)}, t0, StatusDisagreed, "e2", 2},
		{"an abstention counts against reachability", 2, abc, []Event{ev(1, "a", ActionAbstain), ev(2, "b", ActionDisagree)}, t0, StatusDisagreed, "e2", 2},
		{"agree, disagree, agree", 2, abc, []Event{ev(1, "a", ActionAgree), ev(2, "b", ActionDisagree), ev(3, "c", ActionAgree)}, t0, StatusReached, "e3", 0},
		{"agree, disagree, disagree", 2, abc, []Event{ev(1, "a", ActionAgree), ev(2, "b", ActionDisagree), ev(3, "c", ActionDisagree)}, t0, StatusDisagreed, "e3", 1},
		{"3 of 3 is unanimity without no_consensus", 3, abc, []Event{ev(1, "a", ActionAbstain)}, t0, StatusDisagreed, "e1", 3},
		{"1 of 3 reached by the first agree", 1, abc, []Event{ev(1, "a", ActionDisagree), ev(2, "b", ActionAgree)}, t0, StatusReached, "e2", 0},
		{"1 of 3 out of reach only when all say no", 1, abc, []Event{ev(1, "a", ActionDisagree), ev(2, "b", ActionAbstain), ev(3, "c", ActionDisagree)}, t0, StatusDisagreed, "e3", 1},
		{"expired with one agree", 2, abc, []Event{ev(1, "a", ActionAgree)}, deadline, StatusExpired, "", 1},
		{"optional participants never count", 1, abco, []Event{ev(1, "o", ActionAgree)}, t0, StatusPending, "", 1},
		{"a decision at the deadline does not count", 2, abc, []Event{ev(1, "a", ActionAgree), late}, deadline, StatusExpired, "", 1},
	}
	for _, c := range cases {
		h := History{Current: 1, Roster: c.roster, Events: c.events, Deadline: deadline, Rule: Quorum(c.k)}
		o := h.Outcome(c.now)
		if o.Status != c.status || o.DecidingEventID != c.event {
			t.Errorf("%s: %s by %q, want %s by %q", c.name, o.Status, o.DecidingEventID, c.status, c.event)
		}
		if got := h.Tally(); got.Missing != c.need || got.Needed != c.k || got.Required != 3 {
			t.Errorf("%s: tally %+v, want %d more of %d", c.name, got, c.need, c.k)
		}
	}
}

func TestQuorumStaleDecisionsDoNotCount(t *testing.T) {
	t.Parallel()
	abc := []Member{{ID: "a", Required: true, Claimed: true}, {ID: "b", Required: true, Claimed: true}, {ID: "c", Required: true, Claimed: true}}
	events := []Event{revEv(1, "a", ActionAgree, 1), revEv(2, "b", ActionDisagree, 1), revEv(3, "c", ActionDisagree, 1)}
	h := History{Current: 2, Terms: map[int]string{1: "A", 2: "B"}, Roster: abc, Events: events, Deadline: deadline, Rule: Quorum(2)}
	if o := h.Outcome(t0); o.Status != StatusPending {
		t.Fatalf("stale decisions decided the room: %+v", o)
	}
	bl := h.Blocking(h.Outcome(t0))
	if len(bl) != 3 || bl[0].Reason != ReasonStaleDecision {
		t.Fatalf("blocking %+v", bl)
	}
	h.Events = append(h.Events, revEv(4, "b", ActionAgree, 2), revEv(5, "a", ActionAgree, 2))
	if o := h.Outcome(t0); o.Status != StatusReached || o.DecidingEventID != "e5" {
		t.Fatalf("agreements on the current revision: %+v", o)
	}
}

func TestQuorumBlocking(t *testing.T) {
	t.Parallel()
	abc := []Member{{ID: "a", Required: true, Claimed: true}, {ID: "b", Required: true, Claimed: true}, {ID: "c", Required: true}}
	ids := func(bl []Blocker) string {
		var s []string
		for _, b := range bl {
			s = append(s, b.ParticipantID+":"+b.Reason)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		events []Event
		want   string
	}{
		{[]Event{ev(1, "a", ActionDisagree)}, "b:no-decision,c:not-claimed"},
		{[]Event{ev(1, "a", ActionAgree), ev(2, "b", ActionAgree)}, "a:decided,b:decided"},
		{[]Event{ev(1, "a", ActionAgree), ev(2, "b", ActionDisagree), ev(3, "c", ActionAgree)}, "a:decided,c:decided"},
		{[]Event{ev(1, "a", ActionDisagree), ev(2, "b", ActionAbstain)}, "a:decided,b:decided"},
	} {
		h := History{Current: 1, Roster: abc, Events: c.events, Deadline: deadline, Rule: Quorum(2)}
		if got := ids(h.Blocking(h.Outcome(t0))); got != c.want {
			t.Errorf("%v: blocking %s, want %s", c.events, got, c.want)
		}
	}
}

func TestAmendDecisionRule(t *testing.T) {
	t.Parallel()
	prev := sampleRevision()
	required := RequiredCount(prev)
	q := Quorum(required)
	next, c, err := Amend(prev, Amendment{Rule: &q}, t0)
	if err != nil || !c.Rule || !c.Terms || next.DecisionRule != q || c.Empty() {
		t.Fatalf("a new rule: %+v %+v %v", next.DecisionRule, c, err)
	}
	tooMany := Quorum(required + 1)
	var verr *ValidationError
	if _, _, err := Amend(prev, Amendment{Rule: &tooMany}, t0); !errors.As(err, &verr) || verr.Field != "decisionRule" {
		t.Fatalf("a quorum above the roster: %v", err)
	}
	added := Participant{ParticipantID: "new", DisplayName: "New", Kind: KindAgent, Required: true}
	if n, _, err := Amend(prev, Amendment{Rule: &tooMany, Add: []Participant{added}}, t0); err != nil || n.DecisionRule != tooMany {
		t.Fatalf("k is checked against the roster after the amendment: %v", err)
	}
	if _, c, err := Amend(next, Amendment{Add: []Participant{added}}, t0); err != nil || c.Rule || c.Terms {
		t.Fatalf("adding a participant keeps the rule and the terms: %+v %v", c, err)
	}
	same := DecisionRule
	if _, _, err := Amend(prev, Amendment{Rule: &same}, t0); err == nil {
		t.Fatal("the same rule alone changes nothing, and was accepted")
	}
}
