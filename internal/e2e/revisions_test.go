package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/cli"
	"github.com/consensus-md/consensus/internal/envelope"
)

// amend locks the next revision of agreementID through the operator API.
func (s *server) amend(agreementID string, body any) *response {
	return s.do("POST", "/api/v1/admin/agreements/"+agreementID+"/revisions", operator(), body)
}

// amended amends and returns the answer, failing unless it is a 201.
func (s *server) amended(agreementID string, body any) map[string]any {
	s.t.Helper()
	r := s.amend(agreementID, body)
	expect(s.t, r, 201, "")
	return r.json(s.t)
}

// postOn posts a command naming revision rev and digest.
func (a *agent) postOn(key, action string, rev int, digest string) *response {
	h := a.auth()
	h["Idempotency-Key"] = key
	return a.s.do("POST", a.s.agentPath(a.inv.InvitationID, "events"), h, map[string]any{"action": action, "body": "", "revision": rev, "digest": digest})
}

// roomJSON reads the room, failing unless it is a 200.
func (a *agent) roomJSON() map[string]any {
	a.s.t.Helper()
	r := a.room()
	expect(a.s.t, r, 200, "")
	return r.json(a.s.t)
}

// rosterEntry is participant pid's entry of room m.
func rosterEntry(t *testing.T, m map[string]any, pid string) map[string]any {
	t.Helper()
	for _, e := range m["roster"].([]any) {
		if e := e.(map[string]any); e["participantId"] == pid {
			return e
		}
	}
	t.Fatalf("no roster entry for %s", pid)
	return nil
}

// blocking renders room m's blocking list as "participantId:reason".
func blocking(m map[string]any, key string) []string {
	list, _ := m[key].([]any)
	out := []string{}
	for _, b := range list {
		b := b.(map[string]any)
		out = append(out, fmt.Sprint(b["participantId"], ":", b["reason"]))
	}
	return out
}

func same(got []string, want ...string) bool {
	return strings.Join(got, " ") == strings.Join(want, " ")
}

// current is the room's revision number and digest.
func current(m map[string]any) (int, string) {
	rev := m["revision"].(map[string]any)
	return int(rev["number"].(float64)), rev["revisionDigest"].(string)
}

// notices returns the revision notices delivered to address.
func (s *server) notices(t *testing.T, address string, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var out []string
		files, _ := filepath.Glob(filepath.Join(s.Maildir, "new", "*"))
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err == nil && bytes.Contains(raw, []byte("To: <"+address+">")) && bytes.Contains(raw, []byte("Consensus revision notice v1")) {
				out = append(out, string(raw))
			}
		}
		if len(out) >= n {
			return out
		}
	}
	t.Fatalf("fewer than %d revision notices for %s", n, address)
	return nil
}

// TestRevisionDeadlineOnly: a revision that moves the deadline keeps the
// terms, so an earlier agree still counts and consensus is reached without
// anyone deciding again; old commands are refused naming revision 2.
func TestRevisionDeadlineOnly(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Deadline only", s.future())
	a := s.agent(c.Participants[0].InvitationID).join()
	b := s.agent(c.Participants[1].InvitationID).join()
	expect(t, a.post("a-agree-1", "agree", ""), 201, "")
	before := a.roomJSON()
	_, digest1 := current(before)
	terms1 := before["revision"].(map[string]any)["termsDigest"].(string)

	later := s.future().Add(72 * time.Hour)
	out := s.amended(c.AgreementID, map[string]any{"deadline": later.Format(time.RFC3339)})
	if out["revisionNumber"] != float64(2) || out["termsChanged"] != false || out["termsDigest"] != terms1 ||
		fmt.Sprint(out["changed"]) != "[deadline]" || len(out["added"].([]any)) != 0 || len(out["notified"].([]any)) != 2 {
		t.Fatalf("amend answer %v", out)
	}
	m := a.roomJSON()
	n, digest2 := current(m)
	if n != 2 || digest2 != out["revisionDigest"] || m["deadline"] != later.UTC().Format(time.RFC3339) {
		t.Fatalf("room revision %d %s deadline %v", n, digest2, m["deadline"])
	}
	revs := m["revisions"].([]any)
	if len(revs) != 2 || revs[0].(map[string]any)["revisionDigest"] != digest1 || revs[0].(map[string]any)["termsDigest"] != revs[1].(map[string]any)["termsDigest"] {
		t.Fatalf("revisions %v", revs)
	}
	if e := rosterEntry(t, m, a.pid); e["decision"] != "agree" || e["revision"] != float64(1) || e["stale"] != false {
		t.Fatalf("a's roster entry %v", e)
	}
	if m["you"].(map[string]any)["decision"] != "agree" || !same(blocking(m, "blocking"), b.pid+":no-decision") {
		t.Fatalf("you %v, blocking %v", m["you"], blocking(m, "blocking"))
	}

	t.Run("a command on revision 1 names revision 2", func(t *testing.T) {
		r := b.postOn("b-old-agree-1", "agree", 1, digest1)
		expect(t, r, 409, "revision-mismatch")
		if d := r.json(t)["detail"].(string); !strings.Contains(d, "revision 2") || !strings.Contains(d, digest2) {
			t.Fatalf("detail %q", d)
		}
	})
	t.Run("the carried agree stands", func(t *testing.T) {
		expect(t, a.postOn("a-again-disagree-2", "disagree", 2, digest2), 409, "already-decided")
	})
	t.Run("invitations expire with the new deadline", func(t *testing.T) {
		s.Clock.Advance(50 * time.Hour) // past the first deadline, before the second
		r := a.exchange()
		expect(t, r, 200, "")
		x := r.json(t)
		if x["revisionNumber"] != float64(2) || x["revisionDigest"] != digest2 || x["termsDigest"] != terms1 {
			t.Fatalf("exchange %v", x)
		}
		// the claim made on revision 1 replays: same token, binding and digest
		a.session = x["sessionToken"].(string)
		cl := a.claim(map[string]any{"emailProof": a.inv.EmailProof, "inbox": a.inv.Inbox})
		expect(t, cl, 200, "")
		if cm := cl.json(t); cm["participantToken"] != a.token || cm["binding"].(map[string]any)["revision"] != float64(1) {
			t.Fatalf("claim replay after a revision %v", cm)
		}
	})
	t.Run("consensus without deciding again", func(t *testing.T) {
		r := b.postOn("b-agree-2", "agree", 2, digest2)
		expect(t, r, 201, "")
		if r.json(t)["outcome"].(map[string]any)["status"] != "reached" {
			t.Fatalf("outcome %s", r.body)
		}
		m := a.roomJSON()
		if !same(blocking(m, "blocking"), a.pid+":decided", b.pid+":decided") {
			t.Fatalf("blocking once reached %v", blocking(m, "blocking"))
		}
		art := a.artifact("GET")
		expect(t, art, 200, "")
		for _, want := range []string{"## Revisions", "| agree | 1 (carried over: same terms) |", "| agree | 2 |", digest1, digest2, "| unchanged |"} {
			if !bytes.Contains(art.body, []byte(want)) {
				t.Errorf("CONSENSUS.md lacks %q", want)
			}
		}
	})
	t.Run("every participant was told, without a secret", func(t *testing.T) {
		for _, p := range []*agent{a, b} {
			n := s.notices(t, p.inv.Inbox, 1)[0]
			if !strings.Contains(n, "Revision digest: "+digest2) || !strings.Contains(n, "still counts") ||
				strings.Contains(n, p.inv.Secret) || strings.Contains(n, p.inv.EmailProof) || strings.Contains(n, envelope.BeginMarker) {
				t.Fatalf("notice to %s:\n%s", p.inv.Inbox, n)
			}
		}
	})
}

// TestRevisionObjectiveMakesAgreeStale: a changed objective makes the
// earlier agree stale; blocking names its author with stale-decision, and
// agreeing again on revision 2 reaches consensus.
func TestRevisionObjectiveMakesAgreeStale(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Objective", s.future())
	a := s.agent(c.Participants[0].InvitationID).join()
	b := s.agent(c.Participants[1].InvitationID).join()
	expect(t, a.post("a-agree-1", "agree", ""), 201, "")

	out := s.amended(c.AgreementID, map[string]any{"objective": "Decide whether to proceed on Thursday instead."})
	if out["termsChanged"] != true || fmt.Sprint(out["changed"]) != "[objective]" {
		t.Fatalf("amend %v", out)
	}
	m := a.roomJSON()
	_, digest2 := current(m)
	if e := rosterEntry(t, m, a.pid); e["decision"] != "agree" || e["revision"] != float64(1) || e["stale"] != true || e["state"] != "claimed" {
		t.Fatalf("a's roster entry %v", e)
	}
	if m["you"].(map[string]any)["decision"] != nil {
		t.Fatalf("a stale decision is not yours on revision 2: %v", m["you"])
	}
	if !same(blocking(m, "blocking"), a.pid+":stale-decision", b.pid+":no-decision") {
		t.Fatalf("blocking %v", blocking(m, "blocking"))
	}
	if stale := m["blocking"].([]any)[0].(map[string]any); stale["decision"] != "agree" || stale["revision"] != float64(1) {
		t.Fatalf("the stale decision is not named: %v", stale)
	}
	expect(t, b.postOn("b-agree-2", "agree", 2, digest2), 201, "")
	if m := b.roomJSON(); m["outcome"].(map[string]any)["status"] != "pending" || !same(blocking(m, "blocking"), a.pid+":stale-decision") {
		t.Fatalf("after b agreed: %v %v", m["outcome"], blocking(m, "blocking"))
	}
	r := a.postOn("a-agree-2", "agree", 2, digest2)
	expect(t, r, 201, "")
	if r.json(t)["outcome"].(map[string]any)["status"] != "reached" {
		t.Fatalf("re-agreeing did not reach consensus: %s", r.body)
	}
	art := a.artifact("GET")
	expect(t, art, 200, "")
	if bytes.Contains(art.body, []byte("(carried over")) || !bytes.Contains(art.body, []byte("| changed |")) {
		t.Fatalf("CONSENSUS.md:\n%s", art.body)
	}
	n := s.notices(t, a.inv.Inbox, 1)[0]
	if !strings.Contains(n, "- the objective") || !strings.Contains(n, "no longer counts") {
		t.Fatalf("notice:\n%s", n)
	}
}

// TestRevisionBackToEarlierTerms: terms that return to those of an earlier
// revision revive the decision made on it (the terms digests are equal),
// not the one made on the revision in between; the operator CLI locks each.
func TestRevisionBackToEarlierTerms(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Back", s.future(), participantSpec{"Alpha", "agent", true}, participantSpec{"Beta", "agent", true}, participantSpec{"Gamma", "agent", true})
	a := s.agent(c.Participants[0].InvitationID).join()
	expect(t, a.post("a-agree-1", "agree", ""), 201, "")
	amendCLI := func(changes string) string {
		var out, errb bytes.Buffer
		env := cli.Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(changes), Getenv: func(k string) string {
			return map[string]string{"CONSENSUS_URL": s.URL, "CONSENSUS_OPERATOR_TOKEN": operatorToken}[k]
		}}
		if code := cli.Main([]string{"admin", "amend", c.AgreementID, "-f", "-", "--output", "json"}, env); code != 0 {
			t.Fatalf("consensus admin amend: exit %d: %s", code, errb.String())
		}
		return out.String()
	}
	if out := amendCLI(`{"objective":"Something else."}`); !strings.Contains(out, `"termsChanged": true`) {
		t.Fatalf("amend 2: %s", out)
	}
	_, digest2 := current(a.roomJSON())
	expect(t, a.postOn("a-agree-2", "agree", 2, digest2), 201, "")
	if out := amendCLI(`{"objective":"Decide whether to proceed."}`); !strings.Contains(out, `"revisionNumber": 3`) {
		t.Fatalf("amend 3: %s", out)
	}
	m := a.roomJSON()
	revs := m["revisions"].([]any)
	if revs[0].(map[string]any)["termsDigest"] != revs[2].(map[string]any)["termsDigest"] {
		t.Fatal("revision 3 does not have revision 1's terms")
	}
	if e := rosterEntry(t, m, a.pid); e["decision"] != "agree" || e["revision"] != float64(1) || e["stale"] != false || e["state"] != "decided" {
		t.Fatalf("a's roster entry on revision 3: %v", e)
	}
}
