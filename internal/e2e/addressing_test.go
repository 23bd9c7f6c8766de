package e2e

import (
	"crypto/ed25519"
	"strings"
	"testing"
)

// postWith posts an events command with extra members (to, inReplyTo).
func (a *agent) postWith(key, action, body string, extra map[string]any) *response {
	return a.postWithHeaders(a.auth(), key, action, body, extra)
}

// postInvalid is postWith for a body malformed on purpose.
func (a *agent) postInvalid(key, action, body string, extra map[string]any) *response {
	return a.postWithHeaders(invalid(a.auth()), key, action, body, extra)
}

func (a *agent) postWithHeaders(h map[string]string, key, action, body string, extra map[string]any) *response {
	h["Idempotency-Key"] = key
	m := map[string]any{"action": action, "body": body, "revision": 1, "digest": a.digest}
	for k, v := range extra {
		m[k] = v
	}
	return a.s.do("POST", a.s.agentPath(a.inv.InvitationID, "events"), h, m)
}

// awaiting is room m's you.awaitingReply.
func awaiting(t *testing.T, m map[string]any) []string {
	t.Helper()
	raw, ok := m["you"].(map[string]any)["awaitingReply"].([]any)
	if !ok {
		t.Fatalf("the room has no you.awaitingReply: %v", m["you"])
	}
	out := make([]string, len(raw))
	for i, v := range raw {
		out[i] = v.(string)
	}
	return out
}

// TestAddressedQuestions: a question names the participants it asks; the
// room and the feed show it awaiting each of them until each answers with
// a comment naming it; a decision does not answer it; a closed room awaits
// nothing; malformed addressing is refused naming the member; and the
// record, which carries to and in_reply_to in its commands, verifies with
// both verifiers.
func TestAddressedQuestions(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertestOptions(signingSeed))
	c := s.createRule("Addressed", nil)
	a := s.agent(c.Participants[0].InvitationID).join()
	b := s.agent(c.Participants[1].InvitationID).join()
	cy := s.agent(c.Participants[2].InvitationID).join()

	r := a.postWith("a-ask-000001", "question", "Budget?", map[string]any{"to": []string{b.pid, cy.pid}})
	expect(t, r, 201, "")
	ev := r.json(t)["event"].(map[string]any)
	qid := ev["id"].(string)
	if to, _ := ev["to"].([]any); len(to) != 2 || to[0] != b.pid || to[1] != cy.pid {
		t.Fatalf("the stored question's to is %v", ev["to"])
	}

	for name, tc := range map[string]struct {
		action string
		extra  map[string]any
		field  string
	}{
		"to on a comment":         {"comment", map[string]any{"to": []string{b.pid}}, "to"},
		"empty to":                {"question", map[string]any{"to": []string{}}, "to"},
		"repeated":                {"question", map[string]any{"to": []string{b.pid, b.pid}}, "to"},
		"not an id":               {"question", map[string]any{"to": []string{"Bo"}}, "to"},
		"a stranger":              {"question", map[string]any{"to": []string{qid}}, "to"},
		"oneself":                 {"change_request", map[string]any{"to": []string{a.pid}}, "to"},
		"to not an array":         {"question", map[string]any{"to": b.pid}, ""},
		"reply on a question":     {"question", map[string]any{"inReplyTo": qid}, "inReplyTo"},
		"reply to nothing":        {"comment", map[string]any{"inReplyTo": b.pid}, "inReplyTo"},
		"reply to a non-id":       {"comment", map[string]any{"inReplyTo": "q1"}, "inReplyTo"},
		"reply to a decision-ish": {"comment", map[string]any{"inReplyTo": ""}, "inReplyTo"},
	} {
		r := a.postInvalid("bad-"+strings.ReplaceAll(name, " ", "-"), tc.action, "x", tc.extra)
		expect(t, r, 400, "invalid-request")
		if tc.field != "" && !strings.Contains(string(r.body), `"`+tc.field+`"`) {
			t.Errorf("%s: the problem does not name %s: %s", name, tc.field, r.body)
		}
	}
	// A comment is not a question: a reply to it is refused.
	cr := b.post("b-comment-001", "comment", "Noted.")
	expect(t, cr, 201, "")
	expect(t, a.postWith("a-reply-cmt1", "comment", "x", map[string]any{"inReplyTo": cr.json(t)["event"].(map[string]any)["id"]}), 400, "invalid-request")

	if got := awaiting(t, a.roomJSON()); len(got) != 0 {
		t.Fatalf("the asker awaits %v", got)
	}
	for _, p := range []*agent{b, cy} {
		if got := awaiting(t, p.roomJSON()); !same(got, qid) {
			t.Fatalf("%s awaits %v, want the question", p.pid, got)
		}
	}
	feed := b.s.do("GET", b.s.agentPath(b.inv.InvitationID, "events"), b.auth(), nil)
	expect(t, feed, 200, "")
	if got, _ := feed.json(t)["awaitingReply"].([]any); len(got) != 1 || got[0] != qid {
		t.Fatalf("the feed's awaitingReply is %v", feed.json(t)["awaitingReply"])
	}

	// b answers; cy decides without answering.
	r = b.postWith("b-answer-001", "comment", "Ten thousand.", map[string]any{"inReplyTo": qid})
	expect(t, r, 201, "")
	if got := r.json(t)["event"].(map[string]any)["inReplyTo"]; got != qid {
		t.Fatalf("the reply's inReplyTo is %v", got)
	}
	if got := awaiting(t, b.roomJSON()); len(got) != 0 {
		t.Fatalf("b answered, still awaits %v", got)
	}
	expect(t, cy.post("c-agree-0001", "agree", ""), 201, "")
	if got := awaiting(t, cy.roomJSON()); !same(got, qid) {
		t.Fatalf("a decision answered the question for cy: awaits %v", got)
	}

	expect(t, a.post("a-agree-0001", "agree", ""), 201, "")
	expect(t, b.post("b-agree-0001", "agree", ""), 201, "")
	if got := awaiting(t, cy.roomJSON()); len(got) != 0 {
		t.Fatalf("a closed room still awaits cy's reply: %v", got)
	}

	rec := a.record(nil)
	expect(t, rec, 200, "")
	if !strings.Contains(string(rec.body), `"in_reply_to":"`+qid+`"`) || !strings.Contains(string(rec.body), `"to":["`+b.pid+`","`+cy.pid+`"]`) {
		t.Fatalf("the record does not carry the addressing:\n%s", rec.body)
	}
	art := a.artifact("GET")
	expect(t, art, 200, "")
	keys := s.do("GET", "/.well-known/consensus-keys", nil, nil)
	expect(t, keys, 200, "")
	if g, n := verifyBoth(t, rec.body, art.body, keys.body); len(g) != 0 || len(n) != 0 {
		t.Fatalf("the record with addressed events fails: Go %v, Node %v", g, n)
	}
}

// TestAddressedQuestionSigned: a keyed participant's signature covers to:
// signed over the command with to it is stored; the same signature sent
// with other addressees is refused.
func TestAddressedQuestionSigned(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertestOptions(signingSeed))
	c := s.createRule("Addressed, signed", nil)
	priv := newKey("addressed")
	k, _ := s.joinKeyed(c.Participants[0].InvitationID, priv)
	b := s.agent(c.Participants[1].InvitationID).join()
	cy := s.agent(c.Participants[2].InvitationID).join()

	cmd := k.command("k-ask-000001", "question", "Which date?")
	cmd["to"] = []string{b.pid}
	sig := b64.EncodeToString(ed25519.Sign(priv, jcs(t, cmd)))
	post := func(key string, to []string) *response {
		h := k.auth()
		h["Idempotency-Key"] = key
		h["Consensus-Signature"] = sig
		return s.do("POST", s.agentPath(k.inv.InvitationID, "events"), h,
			map[string]any{"action": "question", "body": "Which date?", "revision": 1, "digest": k.digest, "to": to})
	}
	expect(t, post("k-ask-000001", []string{cy.pid}), 400, "bad-signature") // same key, other addressees
	expect(t, post("k-ask-000001", []string{b.pid}), 201, "")
	if got := awaiting(t, b.roomJSON()); len(got) != 1 {
		t.Fatalf("b awaits %v", got)
	}
}
