package e2e

// A revision's other effects: a required participant added, expiry naming
// the silent, refusals of an amendment, and the operator's view.

import (
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/canon"
)

// TestRevisionAddsRequiredParticipant: a required participant added in
// revision 2 gets an invitation for revision 2 and blocks until it agrees.
func TestRevisionAddsRequiredParticipant(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Added", s.future())
	a := s.agent(c.Participants[0].InvitationID).join()
	b := s.agent(c.Participants[1].InvitationID).join()
	expect(t, a.post("a-agree-1", "agree", ""), 201, "")

	out := s.amended(c.AgreementID, map[string]any{"participants": []map[string]any{
		{"displayName": "Gamma", "kind": "agent", "email": "gamma@agents.example", "required": true}}})
	added := out["added"].([]any)
	if out["termsChanged"] != false || len(added) != 1 || added[0].(map[string]any)["delivery"] != "queued" {
		t.Fatalf("amend %v", out)
	}
	g := s.agent(added[0].(map[string]any)["invitationId"].(string))
	if g.inv.RevisionNumber != 2 || g.inv.RevisionDigest != out["revisionDigest"] {
		t.Fatalf("the invitation names revision %d %s", g.inv.RevisionNumber, g.inv.RevisionDigest)
	}
	gid := added[0].(map[string]any)["participantId"].(string)
	m := a.roomJSON()
	_, digest2 := current(m)
	if !same(blocking(m, "blocking"), b.pid+":no-decision", gid+":not-claimed") {
		t.Fatalf("blocking %v", blocking(m, "blocking"))
	}
	expect(t, b.postOn("b-agree-2", "agree", 2, digest2), 201, "")
	if m := a.roomJSON(); m["outcome"].(map[string]any)["status"] != "pending" || !same(blocking(m, "blocking"), gid+":not-claimed") {
		t.Fatalf("the added participant does not block: %v", blocking(m, "blocking"))
	}
	g.join()
	if m := g.roomJSON(); !same(blocking(m, "blocking"), gid+":no-decision") {
		t.Fatalf("blocking once claimed %v", blocking(m, "blocking"))
	}
	r := g.postOn("g-agree-2", "agree", 2, digest2)
	expect(t, r, 201, "")
	if r.json(t)["outcome"].(map[string]any)["status"] != "reached" {
		t.Fatalf("outcome %s", r.body)
	}
	if len(s.notices(t, a.inv.Inbox, 1)) != 1 {
		t.Fatal("a was not told")
	}
}

// TestRevisionExpiryListsTheSilent: expiry after a revision lists the
// required participants that were silent, in blockedBy and blocking.
func TestRevisionExpiryListsTheSilent(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Expiry", s.future(), participantSpec{"Alpha", "agent", true}, participantSpec{"Beta", "agent", true},
		participantSpec{"Gamma", "agent", true}, participantSpec{"Watcher", "agent", false})
	a := s.agent(c.Participants[0].InvitationID).join()
	b := s.agent(c.Participants[1].InvitationID).join()
	expect(t, a.post("a-agree-1", "agree", ""), 201, "")
	expect(t, b.post("b-agree-1", "agree", ""), 201, "")
	s.amended(c.AgreementID, map[string]any{"title": "Expiry, reworded"})
	m := b.roomJSON()
	_, digest2 := current(m)
	expect(t, b.postOn("b-agree-2", "agree", 2, digest2), 201, "")

	s.Clock.Advance(49 * time.Hour)
	m = a.roomJSON()
	o := m["outcome"].(map[string]any)
	gid := c.Participants[2].ParticipantID
	if o["status"] != "expired" || !same(blocking(o, "blockedBy"), a.pid+":stale-decision", gid+":not-claimed") ||
		!same(blocking(m, "blocking"), blocking(o, "blockedBy")...) {
		t.Fatalf("expired outcome %v, blocking %v", o, blocking(m, "blocking"))
	}
	expect(t, s.amend(c.AgreementID, map[string]any{"deadline": s.future().Format(time.RFC3339)}), 409, "room-closed")
}

// TestAmendRefusals: a final outcome, an unknown agreement, a revision that
// changes nothing and a taken address are refused, and nothing is locked.
func TestAmendRefusals(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Refusals", s.future())
	expect(t, s.amend(c.AgreementID, map[string]any{"title": "Refusals"}), 400, "invalid-request")
	expect(t, s.amend(c.AgreementID, map[string]any{"participants": []map[string]any{
		{"displayName": "Twin", "kind": "agent", "email": "P0-ALPHA@agents.example", "required": true}}}), 400, "invalid-request")
	expect(t, s.do("POST", "/api/v1/admin/agreements/"+c.AgreementID+"/revisions", invalid(operator()), map[string]any{}), 400, "invalid-request")
	expect(t, s.do("POST", "/api/v1/admin/agreements/"+c.AgreementID+"/revisions", invalid(operator()), map[string]any{"revision": 3}), 400, "invalid-request")
	expect(t, s.amend("0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b", map[string]any{"title": "x"}), 404, "not-found")
	expect(t, s.do("POST", "/api/v1/admin/agreements/"+c.AgreementID+"/revisions", nil, map[string]any{"title": "x"}), 401, "unauthorized")

	a := s.agent(c.Participants[0].InvitationID).join()
	b := s.agent(c.Participants[1].InvitationID).join()
	if n, _ := current(a.roomJSON()); n != 1 {
		t.Fatalf("a refused amend locked revision %d", n)
	}
	expect(t, a.post("a-agree-1", "agree", ""), 201, "")
	expect(t, b.post("b-disagree-1", "disagree", ""), 201, "")
	expect(t, s.amend(c.AgreementID, map[string]any{"objective": "Try again."}), 409, "room-closed")
	if m := a.roomJSON(); len(m["revisions"].([]any)) != 1 || m["outcome"].(map[string]any)["status"] != "disagreed" {
		t.Fatalf("after a refused amend: %v", m["outcome"])
	}
}

// TestRevisionOperatorView: the operator sees the new revision, the
// decision that counts and each email's kind.
func TestRevisionOperatorView(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Operator view", s.future())
	a := s.agent(c.Participants[0].InvitationID).join()
	expect(t, a.post("a-agree-1", "agree", ""), 201, "")
	out := s.amended(c.AgreementID, map[string]any{"rules": []string{}})
	r := s.do("GET", "/api/v1/admin/agreements/"+c.AgreementID, operator(), nil)
	expect(t, r, 200, "")
	d := r.json(t)
	if d["revisionNumber"] != float64(2) || d["revisionDigest"] != out["revisionDigest"] {
		t.Fatalf("detail %v", d)
	}
	p := d["participants"].([]any)[0].(map[string]any)
	kinds := []string{}
	for _, del := range p["deliveries"].([]any) {
		kinds = append(kinds, del.(map[string]any)["kind"].(string))
	}
	if p["decision"] != nil || p["state"] != "claimed" || strings.Join(kinds, ",") != "invitation,revision" {
		t.Fatalf("participant %v (kinds %v)", p, kinds)
	}
	var canonical map[string]any
	x := a.exchange().json(t)
	canonical = x["canonicalRevision"].(map[string]any)
	raw, _ := canon.Marshal(canonical)
	if canon.Digest(raw) != out["revisionDigest"] || canonical["revision"] != float64(2) || canonical["schema"] != s.Origin+"/schemas/agreement/v1" {
		t.Fatalf("canonical revision 2: %v", canonical)
	}
}
