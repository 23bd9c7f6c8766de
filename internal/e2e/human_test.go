package e2e

import (
	"bytes"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/agentroute"
)

func (s *server) humanPath(invitationID, action string) string {
	return agentroute.HumanPrefix + invitationID + "/" + action
}

// person is an invited person on the human API, as the invitation page
// drives it.
func (s *server) person(invitationID string) *agent {
	return &agent{s: s, inv: s.invitation(invitationID)}
}

// humanJoin exchanges and claims with the proof alone on the human API.
func (a *agent) humanJoin() *agent {
	a.s.t.Helper()
	r := a.s.do("POST", a.s.humanPath(a.inv.InvitationID, "exchange"), nil, map[string]string{"secret": a.inv.Secret})
	expect(a.s.t, r, 200, "")
	m := r.json(a.s.t)
	a.session, a.digest = m["sessionToken"].(string), m["revisionDigest"].(string)
	r = a.humanClaim(map[string]any{"emailProof": a.inv.EmailProof})
	expect(a.s.t, r, 200, "")
	m = r.json(a.s.t)
	a.token, a.pid = m["participantToken"].(string), m["participantId"].(string)
	return a
}

func (a *agent) humanClaim(body any) *response {
	return a.s.do("POST", a.s.humanPath(a.inv.InvitationID, "claim"), map[string]string{"Authorization": "Consensus-Session " + a.session}, body)
}

func (a *agent) humanPost(key, action, body string) *response {
	h := a.auth()
	h["Idempotency-Key"] = key
	return a.s.do("POST", a.s.humanPath(a.inv.InvitationID, "events"), h, map[string]any{"action": action, "body": body, "revision": 1, "digest": a.digest})
}

// TestHumanFamily: a person's invitation works on the human API with the
// agent API's rules, claim takes the proof alone, and each family's
// invitations and tokens are unknown to the other's routes.
func TestHumanFamily(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("People too", s.future(), participantSpec{"Agent", "agent", true}, participantSpec{"Person", "human", true}, participantSpec{"Observer", "human", false})
	ag := s.agent(c.Participants[0].InvitationID).join()
	p := s.person(c.Participants[1].InvitationID)
	observer := s.person(c.Participants[2].InvitationID)

	t.Run("each family's invitations are the generic 404 on the other", func(t *testing.T) {
		agentHere := s.do("POST", s.humanPath(ag.inv.InvitationID, "exchange"), nil, map[string]string{"secret": ag.inv.Secret})
		unknown := s.do("POST", s.humanPath("6f1d8a9e-2b3c-4d5e-8f90-123456789abc", "exchange"), nil, map[string]string{"secret": p.inv.Secret})
		humanThere := s.do("POST", s.agentPath(p.inv.InvitationID, "exchange"), nil, map[string]string{"secret": p.inv.Secret})
		for _, r := range []*response{agentHere, unknown, humanThere} {
			expect(t, r, 404, "not-found")
		}
		if !bytes.Equal(agentHere.body, unknown.body) || !bytes.Equal(humanThere.body, unknown.body) || headerDiff(agentHere.Header, unknown.Header) != "" {
			t.Fatalf("the 404s differ:\n%s\n%s\n%s", agentHere.body, humanThere.body, unknown.body)
		}
	})

	r := s.do("POST", s.humanPath(p.inv.InvitationID, "exchange"), nil, map[string]string{"secret": p.inv.Secret})
	expect(t, r, 200, "")
	x := r.json(t)
	p.session, p.digest = x["sessionToken"].(string), x["revisionDigest"].(string)
	wantActions := agentroute.ForKind(s.Origin, agentroute.KindHuman, p.inv.InvitationID)
	if acts := x["actions"].(map[string]any); acts["claim"] != wantActions.Claim || acts["artifact"] != wantActions.Artifact {
		t.Fatalf("actions %v, want the human family", acts)
	}
	if x["participant"].(map[string]any)["kind"] != "human" {
		t.Fatalf("participant %v", x["participant"])
	}

	t.Run("a person's session is unknown to the agent claim", func(t *testing.T) {
		r := s.do("POST", s.agentPath(p.inv.InvitationID, "claim"), map[string]string{"Authorization": "Consensus-Session " + p.session},
			map[string]any{"emailProof": p.inv.EmailProof, "inbox": p.inv.Inbox})
		expect(t, r, 404, "not-found")
	})
	t.Run("claim takes the proof alone", func(t *testing.T) {
		h := invalid(map[string]string{"Authorization": "Consensus-Session " + p.session})
		for _, body := range []any{
			map[string]any{"emailProof": p.inv.EmailProof, "inbox": p.inv.Inbox},
			map[string]any{"emailProof": p.inv.EmailProof, "runtimeEndpoint": "https://example.org/"},
			map[string]any{}, map[string]any{"emailProof": 7},
		} {
			expect(t, s.do("POST", s.humanPath(p.inv.InvitationID, "claim"), h, body), 400, "invalid-request")
		}
	})
	t.Run("a wrong proof is 403", func(t *testing.T) {
		expect(t, p.humanClaim(map[string]any{"emailProof": observer.inv.EmailProof}), 403, "proof-mismatch")
		expect(t, p.humanClaim(map[string]any{"emailProof": "not the code"}), 403, "proof-mismatch")
	})

	var first map[string]any
	t.Run("claim binds the invited address and replays", func(t *testing.T) {
		r := p.humanClaim(map[string]any{"emailProof": p.inv.EmailProof})
		expect(t, r, 200, "")
		first = r.json(t)
		b := first["binding"].(map[string]any)
		if b["inbox"] != p.inv.Inbox || b["runtime_endpoint"] != nil || b["assurance"] != "recipient-email-proof-possession" || first["countsAsSignature"] != false {
			t.Fatalf("binding %v", first)
		}
		if first["actions"].(map[string]any)["room"] != wantActions.Room {
			t.Fatalf("actions %v", first["actions"])
		}
		again := p.humanClaim(map[string]any{"emailProof": " " + p.inv.EmailProof})
		expect(t, again, 403, "proof-mismatch") // the code is compared as sent; the page trims it
		again = p.humanClaim(map[string]any{"emailProof": p.inv.EmailProof})
		expect(t, again, 200, "")
		if m := again.json(t); m["participantToken"] != first["participantToken"] || m["bindingDigest"] != first["bindingDigest"] {
			t.Fatalf("replay differs: %v vs %v", m, first)
		}
	})
	p.token, p.pid = first["participantToken"].(string), first["participantId"].(string)

	t.Run("tokens are unknown to the other family", func(t *testing.T) {
		post := func(path string, a *agent) *response {
			h := a.auth()
			h["Idempotency-Key"] = "cross-family-1"
			return s.do("POST", path, h, map[string]any{"action": "comment", "body": "wrong door", "revision": 1, "digest": p.digest})
		}
		for _, r := range []*response{
			s.do("GET", s.agentPath(p.inv.InvitationID, "room"), p.auth(), nil),
			s.do("GET", s.humanPath(ag.inv.InvitationID, "room"), ag.auth(), nil),
			s.do("GET", s.agentPath(p.inv.InvitationID, "artifact"), p.auth(), nil),
			post(s.agentPath(p.inv.InvitationID, "events"), p),
			post(s.humanPath(ag.inv.InvitationID, "events"), ag),
		} {
			expect(t, r, 401, "unauthorized")
			if r.Header.Get("WWW-Authenticate") != "Consensus-Participant" {
				t.Fatalf("WWW-Authenticate %q", r.Header.Get("WWW-Authenticate"))
			}
		}
	})

	t.Run("same rules: events, replay, outcome, artifact", func(t *testing.T) {
		expect(t, p.humanPost("human-key-1", "comment", "<b>not bold</b> & fine"), 201, "")
		expect(t, p.humanPost("human-key-1", "comment", "<b>not bold</b> & fine"), 200, "")
		expect(t, p.humanPost("human-key-1", "question", "different"), 409, "idempotency-key-reused")
		expect(t, p.humanPost("human-key-2", "agree", ""), 201, "")
		expect(t, p.humanPost("human-key-3", "disagree", ""), 409, "already-decided")
		observer.humanJoin()
		expect(t, observer.humanPost("observer-1", "abstain", ""), 201, "") // optional: recorded, outcome unchanged
		r := ag.post("agent-key-1", "agree", "")
		expect(t, r, 201, "")
		if r.json(t)["outcome"].(map[string]any)["status"] != "reached" {
			t.Fatalf("outcome %s", r.body)
		}
		room := s.do("GET", s.humanPath(p.inv.InvitationID, "room"), p.auth(), nil)
		expect(t, room, 200, "")
		m := room.json(t)
		art := m["artifact"].(map[string]any)
		if art["url"] != wantActions.Artifact || m["you"].(map[string]any)["decision"] != "agree" {
			t.Fatalf("room artifact %v, you %v", art, m["you"])
		}
		a := s.do("GET", s.humanPath(p.inv.InvitationID, "artifact"), p.auth(), nil)
		expect(t, a, 200, "")
		if a.Header.Get("X-Consensus-SHA256") != art["sha256"] || !strings.Contains(string(a.body), "Person") {
			t.Fatalf("artifact %q vs room %v", a.Header.Get("X-Consensus-SHA256"), art["sha256"])
		}
		expect(t, s.do("HEAD", s.humanPath(p.inv.InvitationID, "artifact"), p.auth(), nil), 200, "")
	})
}
