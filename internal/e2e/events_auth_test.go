package e2e

import (
	"strings"
	"testing"
)

// TestEventsCheckTheCredentialFirst: the events route checks its
// credential in the transaction that stores the event, yet a bad one still
// answers 401 before anything about the body or the key, as the documented
// order says; and a good one reaches the body checks.
func TestEventsCheckTheCredentialFirst(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Credential first", s.future())
	a := s.agent(c.Participants[0].InvitationID).join()
	b := s.agent(c.Participants[1].InvitationID).join()
	path := s.agentPath(a.inv.InvitationID, "events")
	good := map[string]any{"action": "comment", "body": "hi", "revision": 1, "digest": a.digest}
	huge := `{"action":"comment","body":"` + strings.Repeat("x", 200_000) + `"}`

	for name, auth := range map[string]string{
		"unknown token":      "Consensus-Participant csp_not-a-token",
		"another invitation": "Consensus-Participant " + b.token,
		"session token":      "Consensus-Participant " + a.session,
	} {
		for body, h := range map[string]map[string]string{
			"valid":     {"Authorization": auth, "Idempotency-Key": "key-0000001"},
			"no key":    invalid(map[string]string{"Authorization": auth}),
			"malformed": invalid(map[string]string{"Authorization": auth, "Idempotency-Key": "key-0000001"}),
			"too large": invalid(map[string]string{"Authorization": auth, "Idempotency-Key": "key-0000001"}),
		} {
			var payload any = good
			switch body {
			case "malformed":
				payload = `{"action":`
			case "too large":
				payload = huge
			}
			r := s.do("POST", path, h, payload)
			expect(t, r, 401, "unauthorized")
			if r.Header.Get("WWW-Authenticate") != "Consensus-Participant" {
				t.Errorf("%s, %s body: WWW-Authenticate %q", name, body, r.Header.Get("WWW-Authenticate"))
			}
		}
	}
	expect(t, s.do("POST", path, invalid(map[string]string{"Idempotency-Key": "key-0000001"}), good), 401, "unauthorized")

	h := a.auth()
	expect(t, s.do("POST", path, invalid(map[string]string{"Authorization": h["Authorization"]}), good), 400, "")
	h["Idempotency-Key"] = "key-0000001"
	expect(t, s.do("POST", path, invalid(h), `{"action":`), 400, "")
	expect(t, s.do("POST", path, invalid(h), huge), 413, "")
	expect(t, s.do("POST", path, h, good), 201, "")

	// Revoked: the malformed body answers 401 from the lookup, the valid
	// one from the check under the lock.
	expect(t, s.do("POST", "/api/v1/admin/participants/"+a.pid+"/revoke", operator(), nil), 200, "")
	expect(t, s.do("POST", path, invalid(h), `{"action":`), 401, "unauthorized")
	h["Idempotency-Key"] = "key-0000002"
	expect(t, s.do("POST", path, h, good), 401, "unauthorized")
	// A replay of a stored event is refused once revoked, too: the
	// credential comes first.
	h["Idempotency-Key"] = "key-0000001"
	expect(t, s.do("POST", path, h, good), 401, "unauthorized")
}
