package e2e

import (
	"strings"
	"testing"
)

// TestSignatureReplay: a keyed participant's signature speaks for one
// event only. Whoever holds the participant token but not the key can read
// every stored signature in GET …/room; posting one again under a new
// Idempotency-Key must be refused, and nothing stored, while the exact
// replay (same key, same command, same signature) still answers 200 with
// the event already stored.
func TestSignatureReplay(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Signature replay", s.future())
	k, _ := s.joinKeyed(c.Participants[0].InvitationID, newKey("ada"))
	bo := s.agent(c.Participants[1].InvitationID).join()

	const body = "Ship on Tuesday"
	first := k.say("replay-0001", "comment", body)["event"].(map[string]any)
	count := func() int { return len(bo.room().json(t)["events"].([]any)) }
	n := count()

	// The thief copies the stored signature from the room view.
	events := k.room().json(t)["events"].([]any)
	stolen, _ := events[len(events)-1].(map[string]any)["signature"].(string)
	if stolen == "" || stolen != first["signature"] {
		t.Fatalf("the room shows signature %q, the post stored %v", stolen, first["signature"])
	}
	t.Run("same command under a new key", func(t *testing.T) {
		r := k.postSigned("replay-0002", "comment", body, stolen)
		expect(t, r, 400, "bad-signature")
		if got := count(); got != n {
			t.Fatalf("the replayed signature stored a new event: %d events, want %d", got, n)
		}
	})
	t.Run("exact replay", func(t *testing.T) {
		r := k.postSigned("replay-0001", "comment", body, stolen)
		expect(t, r, 200, "")
		if id := r.json(t)["event"].(map[string]any)["id"]; id != first["id"] {
			t.Fatalf("the replay answered event %v, want %v", id, first["id"])
		}
	})
	t.Run("a room-command/v1 signature is refused for a new event", func(t *testing.T) {
		r := k.postSigned("replay-0003", "comment", "v1 signed", k.signV1(k.priv, "comment", "v1 signed"))
		expect(t, r, 400, "bad-signature")
		if d, _ := r.json(t)["detail"].(string); !strings.Contains(d, "room-command/v1") || !strings.Contains(d, "room-command/v2") {
			t.Fatalf("the refusal does not name the versions: %q", d)
		}
		if got := count(); got != n {
			t.Fatalf("a v1-signed event was stored: %d events, want %d", got, n)
		}
	})
	t.Run("a decision signed once decides once", func(t *testing.T) {
		m := k.say("replay-0004", "agree", "")
		sig := m["event"].(map[string]any)["signature"].(string)
		expect(t, k.postSigned("replay-0005", "agree", "", sig), 400, "bad-signature")
	})
}
