package room

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTermsDigestVectors: the digests equal those Python's
// json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
// gives for the same four members.
func TestTermsDigestVectors(t *testing.T) {
	t.Parallel()
	r := sampleRevision()
	if d, err := TermsDigest(r); err != nil || d != "248b88b078a6ea4eb07249d939fdc370e71d866759717e37ee5732b2db998a62" {
		t.Fatalf("sample terms digest %s %v", d, err)
	}
	small := Revision{Title: "t", Objective: "o", DecisionRule: DecisionRule}
	if d, _ := TermsDigest(small); d != "ac6db3629d59190200b0ed666597f6fafd232886beba5200f7e1e4eed6390299" {
		t.Fatalf("nil rules must hash as []: %s", d)
	}
}

func TestTermsDigestIgnoresWhatIsNotTerms(t *testing.T) {
	t.Parallel()
	base := sampleRevision()
	want, _ := TermsDigest(base)
	same := base
	same.Revision, same.Deadline, same.LockedAt, same.Issuer = 7, "2027-01-01T00:00:00Z", "2026-12-05T00:00:00Z", "https://other.example"
	same.Participants = append(slices.Clone(base.Participants), Participant{ParticipantID: "x", DisplayName: "Added", Kind: KindAgent, Required: true})
	if d, _ := TermsDigest(same); d != want {
		t.Fatal("revision number, deadline, lock time, issuer or roster changed the terms digest")
	}
	for name, change := range map[string]func(*Revision){
		"title":       func(r *Revision) { r.Title += "." },
		"objective":   func(r *Revision) { r.Objective = strings.ToUpper(r.Objective) },
		"rule text":   func(r *Revision) { r.Rules = []string{r.Rules[0], r.Rules[1] + " "} },
		"rule order":  func(r *Revision) { r.Rules = []string{r.Rules[1], r.Rules[0]} },
		"rule added":  func(r *Revision) { r.Rules = append(slices.Clone(r.Rules), "x") },
		"rule policy": func(r *Revision) { r.DecisionRule = Quorum(1) },
	} {
		r := base
		change(&r)
		if d, _ := TermsDigest(r); d == want {
			t.Errorf("changing the %s kept the terms digest", name)
		}
	}
}

// revEv is a terminal event on revision rev.
func revEv(seq int64, who, action string, rev int) Event {
	e := ev(seq, who, action)
	e.Revision = rev
	return e
}

func TestHistoryTable(t *testing.T) {
	t.Parallel()
	ab := []Member{{ID: "a", Required: true, Claimed: true}, {ID: "b", Required: true, Claimed: true}}
	abc := append(slices.Clone(ab), Member{ID: "c", Required: true})
	abo := append(slices.Clone(ab), Member{ID: "o", Claimed: true})
	same := map[int]string{1: "A", 2: "A"}
	changed := map[int]string{1: "A", 2: "B"}
	back := map[int]string{1: "A", 2: "B", 3: "A"}
	cases := []struct {
		name     string
		cur      int
		terms    map[int]string
		roster   []Member
		events   []Event
		now      time.Time
		status   string
		deciding string
		blocking []string // id:reason
		stale    []string // ids whose standing is stale
	}{
		{"deadline-only revision keeps an agree", 2, same, ab, []Event{revEv(1, "a", ActionAgree, 1)}, t0,
			StatusPending, "", []string{"b:no-decision"}, nil},
		{"carried agree completes with a new one", 2, same, ab, []Event{revEv(1, "a", ActionAgree, 1), revEv(2, "b", ActionAgree, 2)}, t0,
			StatusReached, "e2", []string{"a:decided", "b:decided"}, nil},
		{"changed terms make an agree stale", 2, changed, ab, []Event{revEv(1, "a", ActionAgree, 1), revEv(2, "b", ActionAgree, 2)}, t0,
			StatusPending, "", []string{"a:stale-decision"}, []string{"a"}},
		{"re-agreeing on the new terms reaches", 2, changed, ab, []Event{revEv(1, "a", ActionAgree, 1), revEv(2, "b", ActionAgree, 2), revEv(3, "a", ActionAgree, 2)}, t0,
			StatusReached, "e3", []string{"a:decided", "b:decided"}, nil},
		{"a disagreement after re-deciding wins", 2, changed, ab, []Event{revEv(1, "a", ActionAgree, 1), revEv(2, "a", ActionDisagree, 2), revEv(3, "b", ActionAgree, 2)}, t0,
			StatusDisagreed, "e2", []string{"a:decided"}, nil},
		{"returning to earlier terms revives the agree made on them", 3, back, ab, []Event{revEv(1, "a", ActionAgree, 1), revEv(2, "b", ActionAgree, 3)}, t0,
			StatusReached, "e2", []string{"a:decided", "b:decided"}, nil},
		{"the latest stale decision is shown", 3, back, ab, []Event{revEv(1, "b", ActionAbstain, 1), revEv(2, "a", ActionAgree, 2)}, t0,
			// b's abstention on revision 1 counts again on revision 3; a's agree on B is stale
			StatusNoConsensus, "e1", []string{"b:decided"}, []string{"a"}},
		{"an added required participant blocks unclaimed", 2, same, abc, []Event{revEv(1, "a", ActionAgree, 1), revEv(2, "b", ActionAgree, 1)}, t0,
			StatusPending, "", []string{"c:not-claimed"}, nil},
		{"expiry lists the silent", 2, changed, abc, []Event{revEv(1, "a", ActionAgree, 1), revEv(2, "b", ActionAgree, 2)}, deadline,
			StatusExpired, "", []string{"a:stale-decision", "c:not-claimed"}, []string{"a"}},
		{"optional participants never block", 2, changed, abo, []Event{revEv(1, "o", ActionDisagree, 1), revEv(2, "a", ActionAgree, 2), revEv(3, "b", ActionAgree, 2)}, t0,
			StatusReached, "e3", []string{"a:decided", "b:decided"}, []string{"o"}},
		{"unknown terms never carry", 2, map[int]string{2: "A"}, ab, []Event{revEv(1, "a", ActionAgree, 1)}, t0,
			StatusPending, "", []string{"a:stale-decision", "b:no-decision"}, []string{"a"}},
		{"a decision on a later revision is ignored", 1, same, ab, []Event{revEv(1, "a", ActionAgree, 2)}, t0,
			StatusPending, "", []string{"a:no-decision", "b:no-decision"}, nil},
		{"a decision at the deadline never counts", 1, nil, ab, []Event{revEv(1, "a", ActionAgree, 1), {ID: "late", Seq: 2, ParticipantID: "b", Revision: 1, Action: ActionAgree, CreatedAt: deadline}}, deadline,
			StatusExpired, "", []string{"b:no-decision"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := History{Current: c.cur, Terms: c.terms, Roster: c.roster, Events: c.events, Deadline: deadline}
			o := h.Outcome(c.now)
			if o.Status != c.status || o.DecidingEventID != c.deciding {
				t.Fatalf("outcome %+v, want %s by %q", o, c.status, c.deciding)
			}
			var got []string
			for _, b := range h.Blocking(o) {
				got = append(got, b.ParticipantID+":"+b.Reason)
				if (b.Reason == ReasonDecided || b.Reason == ReasonStaleDecision) != (b.Decision != nil) {
					t.Errorf("%s: decision %v", b.Reason, b.Decision)
				}
			}
			if !slices.Equal(got, c.blocking) {
				t.Errorf("blocking %v, want %v", got, c.blocking)
			}
			var stale []string
			for _, m := range c.roster {
				if s, ok := h.Standings()[m.ID]; ok && s.Stale {
					stale = append(stale, m.ID)
				}
			}
			if !slices.Equal(stale, c.stale) {
				t.Errorf("stale %v, want %v", stale, c.stale)
			}
		})
	}
}

func TestAdmitAcrossRevisions(t *testing.T) {
	t.Parallel()
	ab := []Member{{ID: "a", Required: true}, {ID: "b", Required: true}}
	agreed := []Event{revEv(1, "a", ActionAgree, 1)}
	snap := func(terms map[int]string) Snapshot {
		return Snapshot{Revision: 2, RevisionDigest: "d2", Terms: terms, Deadline: deadline, Roster: ab, Events: agreed}
	}
	cmd := Command{ParticipantID: "a", Revision: 2, RevisionDigest: "d2", Action: ActionDisagree}
	if _, err := Admit(snap(map[int]string{1: "A", 2: "A"}), cmd, t0); !errors.Is(err, ErrAlreadyDecided) {
		t.Errorf("a carried-over agree must stand: %v", err)
	}
	if _, err := Admit(snap(map[int]string{1: "A", 2: "B"}), cmd, t0); err != nil {
		t.Errorf("a stale agree may be decided again: %v", err)
	}
	old := cmd
	old.Revision, old.RevisionDigest = 1, "d1"
	_, err := Admit(snap(map[int]string{1: "A", 2: "B"}), old, t0)
	var rm *RevisionMismatchError
	if !errors.As(err, &rm) || !errors.Is(err, ErrRevisionMismatch) || rm.Revision != 2 || rm.Digest != "d2" {
		t.Fatalf("a command on revision 1: %v", err)
	}
	if !strings.Contains(err.Error(), "it is revision 2 with digest d2") {
		t.Errorf("detail does not name the current revision: %s", err)
	}
}

func TestAmend(t *testing.T) {
	t.Parallel()
	prev := sampleRevision()
	at := time.Date(2026, 12, 3, 10, 0, 0, 500, time.UTC)
	later := time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC)
	str := func(s string) *string { return &s }
	rules := func(r ...string) *[]string { return &r }
	added := Participant{ParticipantID: "n", DisplayName: "New", Kind: KindAgent, Required: true}
	// sampleRevision's title holds U+2028, which a new title may not: a
	// revision locked before that rule stays amendable as long as the
	// title is kept (the "deadline only" case).
	cases := []struct {
		name  string
		a     Amendment
		terms bool
		err   string // a substring of the error, "" for none
	}{
		{"deadline only", Amendment{Deadline: &later}, false, ""},
		{"participant only", Amendment{Add: []Participant{added}}, false, ""},
		{"same title is no change", Amendment{Title: str(prev.Title)}, false, "change nothing"},
		{"nothing", Amendment{}, false, "change nothing"},
		{"title", Amendment{Title: str("Another title")}, true, ""},
		{"objective", Amendment{Objective: str("Another objective.")}, true, ""},
		{"rules", Amendment{Rules: rules("Only one rule")}, true, ""},
		{"rules removed", Amendment{Rules: rules()}, true, ""},
		{"same rules are no change", Amendment{Rules: rules(prev.Rules...)}, false, "change nothing"},
		{"blank title", Amendment{Title: str(" ")}, false, "title"},
		{"title on two lines", Amendment{Title: str("Two\nlines")}, false, "title"},
		{"rule with an escape sequence", Amendment{Rules: rules("\x1b[2J")}, false, "rules[0]"},
		{"long objective", Amendment{Objective: str(strings.Repeat("o", MaxObjective+1))}, false, "objective"},
		{"too many participants", Amendment{Add: make([]Participant, MaxParticipants-1)}, false, "at most 50"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			next, ch, err := Amend(prev, c.a, at)
			if c.err != "" {
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one naming %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if next.Revision != 2 || next.LockedAt != "2026-12-03T10:00:00Z" || next.Schema != prev.Schema || next.AgreementID != prev.AgreementID {
				t.Errorf("revision %d locked %s", next.Revision, next.LockedAt)
			}
			if ch.Terms != c.terms {
				t.Errorf("terms changed %v, want %v", ch.Terms, c.terms)
			}
			before, _ := TermsDigest(prev)
			after, _ := TermsDigest(next)
			if (before != after) != c.terms {
				t.Errorf("digests %s %s", before, after)
			}
			if len(next.Participants) != len(prev.Participants)+len(c.a.Add) || len(ch.Added) != len(c.a.Add) {
				t.Errorf("roster %d", len(next.Participants))
			}
		})
	}
	next, ch, _ := Amend(prev, Amendment{Deadline: &later}, at)
	if !ch.Deadline || ch.PreviousDeadline != prev.Deadline || next.Deadline != "2027-01-31T00:00:00Z" {
		t.Errorf("deadline change %+v, %s", ch, next.Deadline)
	}
	if prev.Revision != 1 || len(prev.Participants) != 2 {
		t.Error("Amend changed its input")
	}
}

// TestRenderArtifactRevisions: a record of one revision is byte for byte the
// record of an agreement that was never amended; a record of several states
// every revision and which decisions were carried over.
func TestRenderArtifactRevisions(t *testing.T) {
	t.Parallel()
	l, _ := Lock(sampleRevision())
	p := l.Revision.Participants
	base := ArtifactInput{Locked: l, ChainHead: strings.Repeat("c", 64), ChainLength: 3, FinalizedAt: "2026-12-02T17:00:00Z", DecidingID: "ev-2",
		Roster: []ArtifactEntry{{Participant: p[0], Decision: ActionAgree, EventID: "ev-2", DecidedAt: "2026-12-02T17:00:00Z", Revision: 1}, {Participant: p[1]}}}
	one := base
	one.Revisions = []ArtifactRevision{{Number: 1, RevisionDigest: l.RevisionDigest, TermsDigest: l.TermsDigest, LockedAt: l.Revision.LockedAt}}
	if RenderArtifact(one) != RenderArtifact(base) || strings.Contains(RenderArtifact(one), "revision |") {
		t.Fatal("a single revision changed the record of a never-amended agreement")
	}
	r2 := sampleRevision()
	r2.Revision, r2.Deadline = 2, "2027-01-31T00:00:00Z"
	l2, _ := Lock(r2)
	r3 := r2
	r3.Revision, r3.Objective = 3, "Changed."
	l3, _ := Lock(r3)
	amended := base
	amended.Locked = l2
	amended.Revisions = []ArtifactRevision{
		{Number: 1, RevisionDigest: l.RevisionDigest, TermsDigest: l.TermsDigest, LockedAt: "2026-12-02T16:00:00Z", Deadline: l.Revision.Deadline},
		{Number: 2, RevisionDigest: l2.RevisionDigest, TermsDigest: l2.TermsDigest, LockedAt: "2026-12-02T16:30:00Z", Deadline: r2.Deadline},
	}
	md := RenderArtifact(amended)
	for _, want := range []string{"## Revisions", "| 1 | `" + l.RevisionDigest + "` | `" + l.TermsDigest + "` | as locked |",
		"| 2 | `" + l2.RevisionDigest + "` | `" + l2.TermsDigest + "` | unchanged | 2027-01-31T00:00:00Z |",
		"| agree | 1 (carried over: same terms) | `ev-2` |", "| none | - | - | - |", "on an earlier revision with the same terms digest"} {
		if !strings.Contains(md, want) {
			t.Errorf("amended record lacks %q:\n%s", want, md)
		}
	}
	amended.Locked = l3
	amended.Revisions = append(amended.Revisions, ArtifactRevision{Number: 3, RevisionDigest: l3.RevisionDigest, TermsDigest: l3.TermsDigest})
	amended.Roster[0].Revision = 3
	md = RenderArtifact(amended)
	if !strings.Contains(md, "| 3 | `"+l3.RevisionDigest+"` | `"+l3.TermsDigest+"` | changed |") || !strings.Contains(md, "| agree | 3 | `ev-2` |") {
		t.Errorf("a changed revision or a decision made on the current one:\n%s", md)
	}
}
