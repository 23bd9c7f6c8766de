package e2e

import (
	"crypto/ed25519"
	"testing"
)

// TestSignedEvents: a keyed participant's events carry its signature, which
// verifies with its key over the command it built; an unsigned or wrongly
// signed event is refused before anything is stored, so a thief holding
// only the participant token cannot speak, let alone decide, for it.
func TestSignedEvents(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Signed events", s.future())
	ada := newKey("ada")
	k, _ := s.joinKeyed(c.Participants[0].InvitationID, ada)
	bo := s.agent(c.Participants[1].InvitationID).join()

	chain := func() (int, any) {
		m := bo.room().json(t)
		return len(m["events"].([]any)), m["chainHead"]
	}
	t.Run("signed comment", func(t *testing.T) {
		m := k.say("comment-0001", "comment", "Tuesday <works> & 🙂")
		ev := m["event"].(map[string]any)
		sig, err := b64.DecodeString(ev["signature"].(string))
		if err != nil || !ed25519.Verify(ada.Public().(ed25519.PublicKey), jcs(t, k.command("comment-0001", "comment", "Tuesday <works> & 🙂")), sig) {
			t.Fatalf("the stored signature does not verify with the agent's key over its own command: %v", ev)
		}
		seen := bo.room().json(t)["events"].([]any)
		if got := seen[len(seen)-1].(map[string]any)["signature"]; got != ev["signature"] {
			t.Fatalf("the room shows signature %v, the post stored %v", got, ev["signature"])
		}
	})
	n, head := chain()
	mallory := newKey("mallory")
	refusals := []struct {
		name, action, body, sig, code string
	}{
		{"unsigned comment", "comment", "hello", "", "signature-required"},
		{"unsigned decision", "agree", "", "", "signature-required"},
		{"signed by another key", "agree", "", k.sign(mallory, "refused-c-key", "agree", ""), "bad-signature"},
		{"signature of another command", "agree", "", k.sign(ada, "refused-d-key", "disagree", ""), "bad-signature"},
		{"signature of another body", "comment", "hello", k.sign(ada, "refused-e-key", "comment", "hello!"), "bad-signature"},
		{"signature under another key", "agree", "", k.sign(ada, "refused-x-key", "agree", ""), "bad-signature"},
		{"not base64url", "agree", "", "not a signature", "bad-signature"},
		{"padded", "agree", "", k.sign(ada, "refused-h-key", "agree", "") + "==", "bad-signature"},
		{"truncated", "agree", "", k.sign(ada, "refused-i-key", "agree", "")[:80], "bad-signature"},
	}
	for i, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			expect(t, k.postSigned("refused-"+string(rune('c'+i))+"-key", c.action, c.body, c.sig), 400, c.code)
			if m, h := chain(); m != n || h != head {
				t.Fatalf("a refused event was stored: %d events, head %v", m, h)
			}
		})
	}
	t.Run("a token thief cannot decide", func(t *testing.T) {
		// the thief has the participant token and every public value, not the key
		for _, sig := range []string{"", k.sign(mallory, "thief-0001", "disagree", "")} {
			r := k.postSigned("thief-0001", "disagree", "", sig)
			if r.StatusCode != 400 {
				t.Fatalf("status %d", r.StatusCode)
			}
		}
		m := bo.room().json(t)
		if m["outcome"].(map[string]any)["status"] != "pending" || len(m["events"].([]any)) != n {
			t.Fatalf("the thief changed the room: %v", m["outcome"])
		}
	})
	t.Run("signature sent twice", func(t *testing.T) {
		r := s.postTwiceSigned(k, "agree", k.sign(ada, "twice-0001", "agree", ""))
		expect(t, r, 400, "invalid-request")
		if m, h := chain(); m != n || h != head {
			t.Fatal("an event with two signatures was stored")
		}
	})
	t.Run("unkeyed participant may not sign", func(t *testing.T) {
		h := bo.auth()
		h["Idempotency-Key"] = "unkeyed-0001"
		h["Consensus-Signature"] = k.sign(ada, "unkeyed-0001", "comment", "x")
		r := s.do("POST", s.agentPath(bo.inv.InvitationID, "events"), h, map[string]any{"action": "comment", "body": "x", "revision": 1, "digest": bo.digest})
		expect(t, r, 400, "bad-signature")
		expect(t, bo.post("unkeyed-0002", "comment", "unsigned is fine"), 201, "")
		ev := bo.room().json(t)["events"].([]any)
		if ev[len(ev)-1].(map[string]any)["signature"] != nil {
			t.Fatal("an unkeyed participant's event shows a signature")
		}
	})
	t.Run("replay needs the signature too", func(t *testing.T) {
		expect(t, k.postSigned("comment-0001", "comment", "Tuesday <works> & 🙂", ""), 400, "signature-required")
		expect(t, k.postSigned("comment-0001", "comment", "Tuesday <works> & 🙂", k.sign(ada, "comment-0001", "comment", "Tuesday <works> & 🙂")), 200, "")
	})
	t.Run("signed decision", func(t *testing.T) {
		m := k.say("decision-0001", "agree", "")
		if m["event"].(map[string]any)["signature"] == nil {
			t.Fatal("the decision carries no signature")
		}
		expect(t, bo.post("decision-0002", "agree", ""), 201, "")
		if bo.room().json(t)["outcome"].(map[string]any)["status"] != "reached" {
			t.Fatal("not reached")
		}
	})
}
