package room

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHistoryProperty drives random revision sequences through the rule as
// the venue uses it (Admit for every command, Amend for every revision,
// History for outcome, standings and blocking) and compares every answer
// with model, a separate restatement of the revision and outcome rules that never
// calls the code under test: it keeps terms as plain labels instead of
// digests, and decides the outcome incrementally, at the moment a command
// or the clock makes it final, instead of replaying the history.
//
// Sequences mix claims, decisions on the current and on older revisions,
// revisions whose terms are equal or changed (including a return to
// earlier terms), deadline moves in both directions, added required and
// optional participants, and the clock passing the deadline. Each check is
// also made on a history condensed to each participant's standing
// decision, which is what the store keeps.
func TestHistoryProperty(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 2))
	seqs, checks, revisions, carried, stale := 0, 0, 0, 0, 0
	quorum, ruleChanged, refused := 0, 0, 0
	outcomes := map[string]int{}
	for trial := 0; trial < 6000; trial++ {
		seqs++
		s := newSim(rng)
		for step := 0; step < 30 && !s.model.final(); step++ {
			s.step(t)
			checks += s.check(t)
		}
		revisions += len(s.revs) - 1
		carried += s.model.carried
		stale += s.model.staled
		ruleChanged += s.ruleChanged
		refused += s.ruleRefused
		if s.model.quorum > 0 {
			quorum++
			outcomes["quorum "+s.model.outcome.Status]++
		} else {
			outcomes["unanimity "+s.model.outcome.Status]++
		}
	}
	t.Logf("property: %d sequences, %d revisions locked, %d checks; %d decisions carried over, %d made stale", seqs, revisions, checks, carried, stale)
	t.Logf("property: %d sequences ending under a quorum, %d rule changes by amendment, %d quorums refused as above the roster; final states %v",
		quorum, ruleChanged, refused, outcomes)
	if revisions < 4000 || carried < 1000 || stale < 1000 {
		t.Fatalf("the generator no longer exercises revisions: %d revisions, %d carried, %d stale", revisions, carried, stale)
	}
	if quorum < 1000 || ruleChanged < 500 || refused < 100 || outcomes["quorum "+StatusReached] < 200 ||
		outcomes["quorum "+StatusDisagreed] < 200 || outcomes["quorum "+StatusExpired] < 100 {
		t.Fatalf("the generator no longer exercises the quorum rule: %d quorum sequences, %d rule changes, %d refused, %v", quorum, ruleChanged, refused, outcomes)
	}
}

// sim is one random sequence: the code under test's inputs and the model.
type sim struct {
	rng    *rand.Rand
	now    time.Time
	revs   []Revision // revs[i] is revision i+1
	terms  map[int]string
	roster []Member
	events []Event
	seq    int64
	model  *model
	// ruleChanged counts the revisions that changed the decision rule,
	// ruleRefused the amendments refused for a quorum above the roster.
	ruleChanged, ruleRefused int
}

var (
	simTitles     = []string{"Release window", "Release window v2"}
	simObjectives = []string{"Ship on Tuesday.", "Ship on Thursday."}
	simRules      = [][]string{{}, {"No weekend deploys."}}
)

// ruleLabel is a rule as the model's terms label writes it.
func ruleLabel(r Rule) string { return fmt.Sprint(r.Agree) }

// requiredOf counts the required members of roster.
func requiredOf(roster []Member) int {
	n := 0
	for _, m := range roster {
		if m.Required {
			n++
		}
	}
	return n
}

func newSim(rng *rand.Rand) *sim {
	s := &sim{rng: rng, now: t0, terms: map[int]string{}, model: newModel()}
	r := Revision{Schema: "https://consensus.md/schemas/agreement/v1", AgreementID: "a", Revision: 1,
		Title: simTitles[0], Objective: simObjectives[0], Rules: simRules[0], DecisionRule: DecisionRule,
		Deadline: deadline.Format(time.RFC3339), LockedAt: t0.Format(time.RFC3339), Issuer: "https://consensus.md"}
	n := 1 + rng.IntN(3)
	for i := 0; i < n; i++ {
		p := Participant{ParticipantID: fmt.Sprintf("p%d", i), DisplayName: "P", Kind: KindAgent, Required: i == 0 || rng.IntN(3) != 0}
		r.Participants = append(r.Participants, p)
		s.roster = append(s.roster, Member{ID: p.ParticipantID, Required: p.Required})
		s.model.add(p.ParticipantID, p.Required)
	}
	if rng.IntN(2) == 0 {
		r.DecisionRule = Quorum(1 + rng.IntN(requiredOf(s.roster)))
	}
	s.lock(r)
	s.model.lock(label(simTitles[0], simObjectives[0], simRules[0], ruleLabel(r.DecisionRule)), r.DecisionRule.Agree, deadline)
	return s
}

func label(title, objective string, rules []string, rule string) string {
	return title + "\x00" + objective + "\x00" + rule + "\x00" + strings.Join(rules, "\x00")
}

func (s *sim) lock(r Revision) {
	s.revs = append(s.revs, r)
	d, err := TermsDigest(r)
	if err != nil {
		panic(err)
	}
	s.terms[r.Revision] = d
}

func (s *sim) current() Revision { return s.revs[len(s.revs)-1] }

func (s *sim) deadline() time.Time {
	d, err := time.Parse(time.RFC3339, s.current().Deadline)
	if err != nil {
		panic(err)
	}
	return d
}

func (s *sim) history(events []Event) History {
	return History{Current: len(s.revs), Terms: s.terms, Roster: s.roster, Events: events, Deadline: s.deadline(), Rule: s.current().DecisionRule}
}

// step makes one random move and checks the code's verdict against the model's.
func (s *sim) step(t *testing.T) {
	t.Helper()
	s.now = s.now.Add(time.Duration(s.rng.IntN(180)) * time.Minute)
	switch k := s.rng.IntN(10); {
	case k < 2:
		i := s.rng.IntN(len(s.roster))
		s.roster[i].Claimed = true
		s.model.claim(s.roster[i].ID)
	case k < 7:
		s.command(t)
	default:
		s.amend(t)
	}
}

func (s *sim) command(t *testing.T) {
	t.Helper()
	who := s.roster[s.rng.IntN(len(s.roster))].ID
	action := []string{ActionAgree, ActionAgree, ActionAgree, ActionAgree, ActionDisagree, ActionAbstain, ActionComment}[s.rng.IntN(7)]
	rev := len(s.revs)
	if s.rng.IntN(6) == 0 {
		rev = 1 + s.rng.IntN(len(s.revs)) // sometimes an older revision
	}
	digest := fmt.Sprintf("digest-%d", rev)
	if s.rng.IntN(12) == 0 {
		digest = "wrong"
	}
	snap := Snapshot{Revision: len(s.revs), RevisionDigest: fmt.Sprintf("digest-%d", len(s.revs)), Terms: s.terms,
		Deadline: s.deadline(), Roster: s.roster, Events: s.events, Rule: s.current().DecisionRule}
	_, err := Admit(snap, Command{ParticipantID: who, Revision: rev, RevisionDigest: digest, Action: action}, s.now)
	want := s.model.admit(who, action, rev, digest == fmt.Sprintf("digest-%d", rev), s.now)
	if !errors.Is(err, want) && (err != nil || want != nil) {
		t.Fatalf("%s: %s %s on revision %d: Admit says %v, the model %v", s.model.trace, who, action, rev, err, want)
	}
	var rm *RevisionMismatchError
	if errors.As(err, &rm) && (rm.Revision != len(s.revs) || rm.Digest != snap.RevisionDigest) {
		t.Fatalf("mismatch names revision %d %s, want the current one", rm.Revision, rm.Digest)
	}
	if err != nil || !IsTerminal(action) {
		return
	}
	s.seq++
	e := Event{ID: fmt.Sprintf("e%d", s.seq), Seq: s.seq, ParticipantID: who, Revision: rev, Action: action, CreatedAt: s.now}
	s.events = append(s.events, e)
	s.model.decide(e)
}

func (s *sim) amend(t *testing.T) {
	t.Helper()
	if s.model.final() || !s.now.Before(s.deadline()) {
		return // the venue refuses a revision unless pending; checked by check
	}
	prev := s.current()
	var a Amendment
	title, objective, rules := prev.Title, prev.Objective, prev.Rules
	if s.rng.IntN(3) == 0 {
		title = simTitles[s.rng.IntN(2)]
		a.Title = &title
	}
	if s.rng.IntN(3) == 0 {
		objective = simObjectives[s.rng.IntN(2)]
		a.Objective = &objective
	}
	if s.rng.IntN(3) == 0 {
		r := simRules[s.rng.IntN(2)]
		rules = r
		a.Rules = &r
	}
	newDeadline := s.deadline()
	if s.rng.IntN(2) == 0 {
		newDeadline = s.now.Add(time.Duration(1+s.rng.IntN(48*60)) * time.Minute).Truncate(time.Second)
		a.Deadline = &newDeadline
	}
	required := requiredOf(s.roster)
	if s.rng.IntN(3) == 0 {
		p := Participant{ParticipantID: fmt.Sprintf("p%d", len(s.roster)), DisplayName: "New", Kind: KindHuman, Required: s.rng.IntN(2) == 0}
		a.Add = append(a.Add, p)
		if p.Required {
			required++
		}
	}
	rule := prev.DecisionRule
	if s.rng.IntN(3) == 0 {
		// unanimity, or a quorum of 1 to one more than the roster allows
		rule = Quorum(s.rng.IntN(required + 2))
		a.Rule = &rule
	}
	next, c, err := Amend(prev, a, s.now)
	terms := label(title, objective, rules, ruleLabel(rule))
	nothing := terms == s.model.terms && newDeadline.Equal(s.model.deadline) && len(a.Add) == 0
	tooMany := rule.Agree > required
	if (nothing || tooMany) != (err != nil) {
		t.Fatalf("%s: amend %+v: error %v, the model expects a change: %v, a quorum above %d: %v", s.model.trace, a, err, !nothing, required, tooMany)
	}
	if err != nil {
		if tooMany && !nothing {
			s.ruleRefused++
		}
		return
	}
	if rule != prev.DecisionRule {
		s.ruleChanged++
	}
	if next.Revision != prev.Revision+1 || next.DecisionRule != rule || c.Terms != (terms != s.model.terms) {
		t.Fatalf("%s: amend %+v gave revision %d, terms changed %v", s.model.trace, a, next.Revision, c.Terms)
	}
	s.lock(next)
	for _, p := range a.Add {
		s.roster = append(s.roster, Member{ID: p.ParticipantID, Required: p.Required})
		s.model.add(p.ParticipantID, p.Required)
	}
	s.model.lock(terms, rule.Agree, newDeadline)
}

// check compares outcome, standings and blocking with the model, on the
// full history and on the condensed one. It returns the checks made.
func (s *sim) check(t *testing.T) int {
	t.Helper()
	s.model.tick(s.now)
	full := s.history(s.events)
	var condensed []Event
	for _, st := range full.Standings() {
		condensed = append(condensed, st.Event)
	}
	n := 0
	for _, h := range []History{full, s.history(condensed)} {
		got := h.Outcome(s.now)
		want := s.model.outcome
		if got.Status != want.Status || got.DecidingEventID != want.DecidingEventID || !got.DecidedAt.Equal(want.DecidedAt) {
			t.Fatalf("%s: outcome %+v, the model %+v", s.model.trace, got, want)
		}
		st := h.Standings()
		for _, m := range s.roster {
			gs, gok := st[m.ID]
			ws, wok := s.model.standing(m.ID)
			if gok != wok || gok && (gs.Event.ID != ws.Event.ID || gs.Stale != ws.Stale) {
				t.Fatalf("%s: standing of %s: %+v (%v), the model %+v (%v)", s.model.trace, m.ID, gs, gok, ws, wok)
			}
		}
		gb, wb := blockList(h.Blocking(got)), s.model.blocking()
		if !slices.Equal(gb, wb) {
			t.Fatalf("%s: blocking %v, the model %v", s.model.trace, gb, wb)
		}
		n += 3
	}
	return n
}

func blockList(bs []Blocker) []string {
	out := []string{}
	for _, b := range bs {
		s := b.ParticipantID + ":" + b.Reason
		if b.Decision != nil {
			s += ":" + b.Decision.ID
		}
		out = append(out, s)
	}
	return out
}
