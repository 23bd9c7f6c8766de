package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/servertest"
)

// quorumOf is the decisionRule "k of the required participants must agree".
func quorumOf(k int) map[string]any { return map[string]any{"type": "quorum", "agree": k} }

// createBody is an operator's create request with three required agents
// (and the optional ones named), and decisionRule when rule is not nil.
func (s *server) createBody(title string, rule any, optional ...string) map[string]any {
	var ps []map[string]any
	for i, name := range append([]string{"Ada", "Bo", "Cy"}, optional...) {
		ps = append(ps, map[string]any{"displayName": name, "kind": "agent", "email": fmt.Sprintf("q%d-%s@agents.example", i, strings.ToLower(name)), "required": i < 3})
	}
	m := map[string]any{"title": title, "objective": "Decide whether to proceed.", "rules": []string{"Be brief."},
		"deadline": s.future().Format(time.RFC3339), "participants": ps}
	if rule != nil {
		m["decisionRule"] = rule
	}
	return m
}

// createRule creates an agreement with three required agents under rule.
func (s *server) createRule(title string, rule any) *servertest.Created {
	s.t.Helper()
	r := s.do("POST", "/api/v1/admin/agreements", operator(), s.createBody(title, rule))
	expect(s.t, r, 201, "")
	var c servertest.Created
	if err := json.Unmarshal(r.body, &c); err != nil {
		s.t.Fatal(err)
	}
	return &c
}

// createHumanQuorum creates a 2-of-3 agreement of a person and two
// required agents.
func (s *server) createHumanQuorum(title string) *servertest.Created {
	s.t.Helper()
	m := s.createBody(title, quorumOf(2))
	m["participants"].([]map[string]any)[0]["kind"] = "human"
	r := s.do("POST", "/api/v1/admin/agreements", operator(), m)
	expect(s.t, r, 201, "")
	var c servertest.Created
	if err := json.Unmarshal(r.body, &c); err != nil {
		s.t.Fatal(err)
	}
	return &c
}

// invitationText is the raw invitation email of invitationID, once delivered.
func (s *server) invitationText(invitationID string) string {
	s.t.Helper()
	s.invitation(invitationID) // waits for it, and checks it as an agent would
	files, _ := filepath.Glob(filepath.Join(s.Maildir, "new", "*"))
	for _, f := range files {
		if raw, err := os.ReadFile(f); err == nil && bytes.Contains(raw, []byte(invitationID)) {
			return string(raw)
		}
	}
	s.t.Fatalf("no invitation email for %s", invitationID)
	return ""
}

// ruleView is room m's decisionRule member.
func ruleView(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	v, ok := m["decisionRule"].(map[string]any)
	if !ok {
		t.Fatalf("the room has no decisionRule: %v", m)
	}
	return v
}

// status is room m's outcome status and deciding event.
func status(m map[string]any) (string, any) {
	o := m["outcome"].(map[string]any)
	return o["status"].(string), o["decidingEventId"]
}

// TestQuorumReachedWhileThirdSilent: 2 of 3 required agents agree while
// the third never joins; the room, its revision Markdown, CONSENSUS.md and
// the invitation email state the rule in words, and the record verifies
// with both verifiers.
func TestQuorumReachedWhileThirdSilent(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertestOptions(signingSeed))
	c := s.createRule("Two of three", quorumOf(2))
	const words = "2 of the 3 required participants must agree"
	if mail := s.invitationText(c.Participants[0].InvitationID); !strings.Contains(mail, "Decision rule: "+words+"\n") {
		t.Fatalf("the invitation email does not state the rule:\n%s", mail)
	}
	a := s.agent(c.Participants[0].InvitationID).join()
	b := s.agent(c.Participants[1].InvitationID).join()
	cy := c.Participants[2].ParticipantID

	m := a.roomJSON()
	rv := ruleView(t, m)
	if rv["type"] != "quorum" || rv["agree"] != float64(2) || rv["requiredParticipants"] != float64(3) || rv["statement"] != words ||
		rv["agreed"] != float64(0) || rv["agreementsNeeded"] != float64(2) {
		t.Fatalf("decisionRule %v", rv)
	}
	rev := m["revision"].(map[string]any)
	if !strings.Contains(rev["markdown"].(string), "- Decision rule: quorum: "+words+"\n") ||
		!strings.Contains(string(mustJSON(rev["canonicalRevision"])), `"decision_rule":{"agree":2,"type":"quorum"}`) {
		t.Fatalf("revision %v", rev)
	}

	expect(t, a.post("a-agree-0001", "agree", ""), 201, "")
	m = b.roomJSON()
	if st, _ := status(m); st != "pending" || ruleView(t, m)["agreementsNeeded"] != float64(1) ||
		!same(blocking(m, "blocking"), b.pid+":no-decision", cy+":not-claimed") {
		t.Fatalf("after one agree: %s, %v, blocking %v", st, ruleView(t, m), blocking(m, "blocking"))
	}
	r := b.post("b-agree-0001", "agree", "")
	expect(t, r, 201, "")
	if o := r.json(t)["outcome"].(map[string]any); o["status"] != "reached" {
		t.Fatalf("the second agreement answered %v", o)
	}
	m = a.roomJSON()
	if st, _ := status(m); st != "reached" || ruleView(t, m)["agreementsNeeded"] != float64(0) || !same(blocking(m, "blocking"), a.pid+":decided", b.pid+":decided") {
		t.Fatalf("reached room: %s, %v, blocking %v", st, ruleView(t, m), blocking(m, "blocking"))
	}
	art := a.artifact("GET")
	expect(t, art, 200, "")
	if !strings.Contains(string(art.body), "- Decision rule: quorum: "+words+"\n") || !strings.Contains(string(art.body), "By the decision rule, "+words+"; 2 did") {
		t.Fatalf("CONSENSUS.md does not state the rule:\n%s", art.body)
	}
	rec := a.record(nil)
	expect(t, rec, 200, "")
	keys := s.do("GET", "/.well-known/consensus-keys", nil, nil)
	expect(t, keys, 200, "")
	if g, n := verifyBoth(t, rec.body, art.body, keys.body); len(g) != 0 || len(n) != 0 {
		t.Fatalf("the quorum record fails: Go %v, Node %v", g, n)
	}
}

// TestQuorumDisagreedAfterTwoDisagree: under 2 of 3, one disagreement
// leaves the quorum reachable; a second puts it out of reach.
func TestQuorumDisagreedAfterTwoDisagree(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertestOptions(signingSeed))
	c := s.createRule("Two of three, refused", quorumOf(2))
	a := s.agent(c.Participants[0].InvitationID).join()
	b := s.agent(c.Participants[1].InvitationID).join()
	expect(t, a.post("a-disagree-01", "disagree", ""), 201, "")
	if st, _ := status(b.roomJSON()); st != "pending" {
		t.Fatalf("one disagreement of three decided a 2-of-3 room: %s", st)
	}
	r := b.post("b-disagree-01", "disagree", "")
	expect(t, r, 201, "")
	deciding := r.json(t)["event"].(map[string]any)["id"]
	m := a.roomJSON()
	if st, ev := status(m); st != "disagreed" || ev != deciding || !same(blocking(m, "blocking"), a.pid+":decided", b.pid+":decided") {
		t.Fatalf("after two disagreements: %s by %v (want %v), blocking %v", st, ev, deciding, blocking(m, "blocking"))
	}
	rec := a.record(nil)
	expect(t, rec, 200, "")
	keys := s.do("GET", "/.well-known/consensus-keys", nil, nil)
	if g, n := verifyBoth(t, rec.body, nil, keys.body); len(g) != 0 || len(n) != 0 {
		t.Fatalf("the record fails: Go %v, Node %v", g, n)
	}
}

// TestQuorumExpiredWithOneAgree: one agreement of the two needed when the
// deadline passes gives expired, blocked by the two silent participants.
func TestQuorumExpiredWithOneAgree(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.createRule("Two of three, too slow", quorumOf(2))
	a := s.agent(c.Participants[0].InvitationID).join()
	expect(t, a.post("a-agree-0001", "agree", ""), 201, "")
	s.Clock.Advance(72 * time.Hour)
	m := a.roomJSON()
	b, cy := c.Participants[1].ParticipantID, c.Participants[2].ParticipantID
	if st, _ := status(m); st != "expired" || !same(blocking(m["outcome"].(map[string]any), "blockedBy"), b+":not-claimed", cy+":not-claimed") ||
		ruleView(t, m)["agreed"] != float64(1) {
		t.Fatalf("after the deadline: %s, blockedBy %v, rule %v", st, blocking(m["outcome"].(map[string]any), "blockedBy"), ruleView(t, m))
	}
}

// TestQuorumAboveRequiredRefused: k larger than the required participants
// (optional ones do not count), or not a whole number from 1, is a 400
// naming decisionRule, on create and on amend; an amendment that adds the
// missing required participant may raise it.
func TestQuorumAboveRequiredRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for name, body := range map[string]map[string]any{
		"4 of 3":                s.createBody("Too many", quorumOf(4)),
		"4 of 3 and 1 optional": s.createBody("Too many", quorumOf(4), "Observer"),
		"0 of 3":                s.createBody("None", quorumOf(0)),
		"another rule":          s.createBody("Majority", "majority"),
	} {
		r := s.do("POST", "/api/v1/admin/agreements", invalid(operator()), body)
		expect(t, r, 400, "invalid-request")
		if f := r.json(t)["field"]; f != "decisionRule" {
			t.Errorf("%s: field %v: %s", name, f, r.body)
		}
	}
	expect(t, s.do("POST", "/api/v1/admin/agreements", operator(), s.createBody("Three of three", quorumOf(3))), 201, "")
	expect(t, s.do("POST", "/api/v1/admin/agreements", operator(), s.createBody("Unanimity", "unanimity-of-required")), 201, "")

	c := s.createRule("Amend the quorum", quorumOf(2))
	r := s.amend(c.AgreementID, map[string]any{"decisionRule": quorumOf(4)})
	expect(t, r, 400, "invalid-request")
	if f := r.json(t)["field"]; f != "decisionRule" {
		t.Fatalf("amend: field %v", f)
	}
	out := s.amended(c.AgreementID, map[string]any{"decisionRule": quorumOf(4),
		"participants": []map[string]any{{"displayName": "Dee", "kind": "agent", "email": "q3-dee@agents.example", "required": true}}})
	if out["termsChanged"] != true || fmt.Sprint(out["changed"]) != "[decisionRule participants]" {
		t.Fatalf("amend with a fourth required participant: %v", out)
	}
}

// TestQuorumRuleChangedByAmend: changing the rule changes the terms, so
// agreements made under the old rule are stale and do not count toward
// the new one; a later amendment that only adds a participant keeps it.
func TestQuorumRuleChangedByAmend(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertestOptions(signingSeed))
	c := s.createRule("Change the rule", nil)
	a := s.agent(c.Participants[0].InvitationID).join()
	b := s.agent(c.Participants[1].InvitationID).join()
	cy := s.agent(c.Participants[2].InvitationID).join()
	expect(t, a.post("a-agree-1", "agree", ""), 201, "")
	expect(t, b.post("b-agree-1", "agree", ""), 201, "")
	m := a.roomJSON()
	if rv := ruleView(t, m); rv["type"] != "unanimity-of-required" || rv["statement"] != "all 3 required participants must agree" || rv["agreementsNeeded"] != float64(1) {
		t.Fatalf("unanimity rule view %v", rv)
	}

	out := s.amended(c.AgreementID, map[string]any{"decisionRule": quorumOf(2)})
	if out["termsChanged"] != true || fmt.Sprint(out["changed"]) != "[decisionRule]" {
		t.Fatalf("amend answer %v", out)
	}
	if n := s.notices(t, "q0-ada@agents.example", 1); !strings.Contains(n[0], "- the decision rule, now: 2 of the 3 required participants must agree\n") ||
		!strings.Contains(n[0], "The terms changed") {
		t.Fatalf("the revision notice does not name the new rule:\n%s", n[0])
	}
	m = a.roomJSON()
	if st, _ := status(m); st != "pending" || ruleView(t, m)["agreementsNeeded"] != float64(2) ||
		!same(blocking(m, "blocking"), a.pid+":stale-decision", b.pid+":stale-decision", cy.pid+":no-decision") {
		t.Fatalf("after the rule changed: %s, %v, blocking %v", st, ruleView(t, m), blocking(m, "blocking"))
	}
	if e := rosterEntry(t, m, a.pid); e["stale"] != true {
		t.Fatalf("a's agreement under unanimity still counts: %v", e)
	}
	n, digest := current(m)
	expect(t, a.postOn("a-agree-2", "agree", n, digest), 201, "")
	if st, _ := status(a.roomJSON()); st != "pending" {
		t.Fatalf("one fresh agreement and one stale one reached 2 of 3: %s", st)
	}
	r := cy.postOn("c-agree-2", "agree", n, digest)
	expect(t, r, 201, "")
	if o := r.json(t)["outcome"].(map[string]any); o["status"] != "reached" {
		t.Fatalf("the second fresh agreement answered %v", o)
	}
	m = b.roomJSON()
	if !same(blocking(m, "blocking"), a.pid+":decided", cy.pid+":decided") {
		t.Fatalf("reached blocking %v", blocking(m, "blocking"))
	}
	rec, art := a.record(nil), a.artifact("GET")
	expect(t, rec, 200, "")
	keys := s.do("GET", "/.well-known/consensus-keys", nil, nil)
	if g, nf := verifyBoth(t, rec.body, art.body, keys.body); len(g) != 0 || len(nf) != 0 {
		t.Fatalf("the amended quorum record fails: Go %v, Node %v", g, nf)
	}
}
