package e2e

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/record"
)

// TestRecordSpansRevisions: an agreement amended twice, first with changed
// terms (the objective), then with the same terms (a later deadline),
// reaches consensus. Its record lists all three revisions with their
// digests; the agreements made on revision 1 are stale and do not count,
// the keyed agent's agreement on revision 2 carries over to revision 3 and
// counts. The record verifies with both verifiers, and changed copies
// (a terms digest, a command's revision digest, a revision dropped) fail
// both, naming what broke.
func TestRecordSpansRevisions(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertestOptions(signingSeed))
	c := s.create("Amended room", s.future(),
		participantSpec{"Ada", "agent", true}, participantSpec{"Bo", "agent", true}, participantSpec{"Cy", "agent", true})
	ada, _ := s.joinKeyed(c.Participants[0].InvitationID, newKey("ada amended"))
	bo := s.agent(c.Participants[1].InvitationID).join()
	cy := s.agent(c.Participants[2].InvitationID).join()

	ada.say("ada-agree-1", "agree", "")
	expect(t, bo.post("bo-agree-1", "agree", ""), 201, "")
	expect(t, cy.post("cy-ask-1", "change_request", "Say which region ships first."), 201, "")

	// Revision 2 changes the objective: both agreements on revision 1 go stale.
	r2 := s.amended(c.AgreementID, map[string]any{"objective": "Decide whether to proceed, EU region first."})
	if r2["termsChanged"] != true {
		t.Fatalf("amend 2: %v", r2)
	}
	digest2 := r2["revisionDigest"].(string)
	ada.onRevision(2, digest2)
	ada.say("ada-agree-2", "agree", "")

	// Revision 3 only moves the deadline: Ada's agreement on revision 2 carries over.
	r3 := s.amended(c.AgreementID, map[string]any{"deadline": s.future().Add(72 * time.Hour).Format(time.RFC3339)})
	if r3["termsChanged"] != false {
		t.Fatalf("amend 3: %v", r3)
	}
	digest3 := r3["revisionDigest"].(string)
	expect(t, bo.record(nil), 404, "record-not-ready")
	expect(t, bo.postOn("bo-agree-3", "agree", 3, digest3), 201, "")
	r := cy.postOn("cy-agree-3", "agree", 3, digest3)
	expect(t, r, 201, "")
	if st := r.json(t)["outcome"].(map[string]any)["status"]; st != "reached" {
		t.Fatalf("outcome %v", st)
	}

	rec := ada.record(nil)
	expect(t, rec, 200, "")
	var parsed record.Record
	if err := json.Unmarshal(rec.body, &parsed); err != nil {
		t.Fatal(err)
	}
	revs := parsed.Revisions
	if len(revs) != 3 || revs[1].RevisionDigest != digest2 || revs[2].RevisionDigest != digest3 ||
		revs[0].TermsDigest == revs[1].TermsDigest || revs[1].TermsDigest != revs[2].TermsDigest || parsed.Final().Number != 3 {
		t.Fatalf("record revisions: %+v", revs)
	}
	var onRev []int
	for _, e := range parsed.Events {
		onRev = append(onRev, e.Command.Revision)
		if e.Command.RevisionDigest != revs[e.Command.Revision-1].RevisionDigest {
			t.Fatalf("event %d names digest %s", e.Seq, e.Command.RevisionDigest)
		}
	}
	if len(onRev) != 6 || onRev[0] != 1 || onRev[3] != 2 || onRev[5] != 3 {
		t.Fatalf("events on revisions %v", onRev)
	}

	keys := s.do("GET", "/.well-known/consensus-keys", nil, nil)
	expect(t, keys, 200, "")
	art := ada.artifact("GET")
	expect(t, art, 200, "")
	if g, n := verifyBoth(t, rec.body, art.body, keys.body); len(g) != 0 || len(n) != 0 {
		t.Fatalf("the record of an amended room does not verify: Go failed %v, Node failed %v", g, n)
	}

	mutations := []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"revision 1's terms stated as the final ones", func(m map[string]any) {
			list := m["revisions"].([]any)
			list[0].(map[string]any)["terms_digest"] = list[2].(map[string]any)["terms_digest"]
		}, record.CheckTermsDigest},
		{"an event names another revision's digest", func(m map[string]any) {
			ev := m["events"].([]any)[3].(map[string]any)
			ev["command"].(map[string]any)["revision_digest"] = digest3
		}, record.CheckCommand},
		{"revision 2 dropped", func(m map[string]any) {
			list := m["revisions"].([]any)
			m["revisions"] = []any{list[0], list[2]}
		}, record.CheckRevision},
	}
	for _, mu := range mutations {
		m := decodeRecord(t, rec.body)
		mu.edit(m)
		g, n := verifyBoth(t, jcs(t, m), art.body, keys.body)
		if !slices.Contains(g, mu.want) || !slices.Contains(n, mu.want) || !slices.Contains(g, record.CheckServiceSignature) || !slices.Contains(n, record.CheckServiceSignature) {
			t.Errorf("%s: Go failed %v, Node failed %v, both must name %s and the service signature", mu.name, g, n, mu.want)
		}
	}
}
