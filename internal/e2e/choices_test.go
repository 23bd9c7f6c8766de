package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPersonTokenRefusedOnMCP: /mcp is an agent's way into its room, like
// the agent REST routes; a person's participant token is refused there
// with the same 401 those routes give a token of the other kind, while an
// agent's token is accepted.
func TestPersonTokenRefusedOnMCP(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("MCP and people", s.future(), participantSpec{"Pat", "human", true}, participantSpec{"Bot", "agent", true})
	pat := s.person(c.Participants[0].InvitationID).humanJoin()
	bot := s.agent(c.Participants[1].InvitationID).join()
	list := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
	mcp := func(token string) *response {
		return s.do("POST", "/mcp", map[string]string{"Authorization": "Consensus-Participant " + token, "Accept": "application/json, text/event-stream"}, list)
	}
	expect(t, mcp(pat.token), 401, "unauthorized")
	expect(t, mcp(bot.token), 200, "")
}

// TestRevokedParticipantsDecisionCounts: revoking a participant stops its
// token; a decision it recorded before stays in the chain and counts, so
// the outcome follows from the events alone, as a record's verifier
// recomputes it.
func TestRevokedParticipantsDecisionCounts(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Revoked after agreeing", s.future())
	a := s.agent(c.Participants[0].InvitationID).join()
	b := s.agent(c.Participants[1].InvitationID).join()
	expect(t, a.post("agree-by-a", "agree", ""), 201, "")
	expect(t, s.do("POST", "/api/v1/admin/participants/"+a.pid+"/revoke", operator(), nil), 200, "")
	expect(t, a.room(), 401, "unauthorized")
	r := b.post("agree-by-b", "agree", "")
	expect(t, r, 201, "")
	if got := r.json(t)["outcome"].(map[string]any)["status"]; got != "reached" {
		t.Fatalf("outcome %v after the revoked participant's earlier agree and the other's, want reached", got)
	}
}

// TestExamplesAreAccepted: every agreement under examples/ is accepted as
// written by the operator API, and the person's example invites a person.
func TestExamplesAreAccepted(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	files, _ := filepath.Glob("../../examples/*.json")
	if len(files) < 2 {
		t.Fatalf("examples: %v", files)
	}
	people := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		doc["deadline"] = s.future().Format(time.RFC3339)
		expect(t, s.do("POST", "/api/v1/admin/agreements", operator(), doc), 201, "")
		for _, p := range doc["participants"].([]any) {
			if p.(map[string]any)["kind"] == "human" {
				people++
			}
		}
	}
	if people == 0 {
		t.Error("no example invites a person")
	}
}
