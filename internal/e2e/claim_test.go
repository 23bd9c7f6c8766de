package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/canon"
)

func TestClaim(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Claim", s.future())
	a := s.agent(c.Participants[0].InvitationID)
	b := s.agent(c.Participants[1].InvitationID)
	m := a.exchange().json(t)
	a.session = m["sessionToken"].(string)
	b.join()
	good := map[string]any{"emailProof": a.inv.EmailProof, "inbox": a.inv.Inbox, "runtimeEndpoint": "https://agent.example/hook"}

	t.Run("no session", func(t *testing.T) {
		r := s.do("POST", s.agentPath(a.inv.InvitationID, "claim"), nil, good)
		expect(t, r, 401, "unauthorized")
		if r.Header.Get("WWW-Authenticate") != "Consensus-Session" {
			t.Fatalf("WWW-Authenticate %q", r.Header.Get("WWW-Authenticate"))
		}
	})
	wrongCreds := map[string]string{
		"invite secret as session":            "Consensus-Session " + a.inv.Secret,
		"participant token":                   "Consensus-Participant " + b.token,
		"participant token in session scheme": "Consensus-Session " + b.token,
		"another invitation's session":        "Consensus-Session " + b.session,
		"made-up session":                     "Consensus-Session css_" + strings.Repeat("x", 43),
		"bearer":                              "Bearer " + a.session,
	}
	for name, h := range wrongCreds {
		t.Run(name, func(t *testing.T) {
			r := s.do("POST", s.agentPath(a.inv.InvitationID, "claim"), map[string]string{"Authorization": h}, good)
			expect(t, r, 401, "unauthorized")
			if r.Header.Get("WWW-Authenticate") != "Consensus-Session" {
				t.Fatalf("WWW-Authenticate %q", r.Header.Get("WWW-Authenticate"))
			}
		})
	}
	bad := map[string]any{
		"missing proof":      map[string]any{"inbox": a.inv.Inbox},
		"missing inbox":      map[string]any{"emailProof": a.inv.EmailProof},
		"proof not a string": map[string]any{"emailProof": 12, "inbox": a.inv.Inbox},
		"inbox not a string": map[string]any{"emailProof": a.inv.EmailProof, "inbox": []string{"x"}},
		"bad address":        map[string]any{"emailProof": a.inv.EmailProof, "inbox": "not an address"},
		"http endpoint":      map[string]any{"emailProof": a.inv.EmailProof, "inbox": a.inv.Inbox, "runtimeEndpoint": "http://agent.example/"},
		"endpoint userinfo":  map[string]any{"emailProof": a.inv.EmailProof, "inbox": a.inv.Inbox, "runtimeEndpoint": "https://u:p@agent.example/"},
		"endpoint too long":  map[string]any{"emailProof": a.inv.EmailProof, "inbox": a.inv.Inbox, "runtimeEndpoint": "https://agent.example/" + strings.Repeat("a", 2048)},
		"unknown field":      map[string]any{"emailProof": a.inv.EmailProof, "inbox": a.inv.Inbox, "signature": "x"},
		"not an object":      []string{"x"},
	}
	for name, body := range bad {
		t.Run(name, func(t *testing.T) { expect(t, a.claimInvalid(body), 400, "invalid-request") })
	}
	t.Run("the session is checked before the body", func(t *testing.T) {
		r := s.do("POST", s.agentPath(a.inv.InvitationID, "claim"), invalid(map[string]string{"Authorization": "Consensus-Session css_unknown"}),
			`{"emailProof":"`+strings.Repeat("p", 5000)+`"}`)
		expect(t, r, 401, "unauthorized")
	})
	t.Run("oversize", func(t *testing.T) {
		expect(t, a.claimInvalid(`{"emailProof":"`+strings.Repeat("p", 4096)+`"}`), 413, "payload-too-large")
	})
	t.Run("wrong proof", func(t *testing.T) {
		expect(t, a.claim(map[string]any{"emailProof": b.inv.EmailProof, "inbox": a.inv.Inbox}), 403, "proof-mismatch")
		expect(t, a.claim(map[string]any{"emailProof": "x", "inbox": a.inv.Inbox}), 403, "proof-mismatch")
	})
	t.Run("another inbox", func(t *testing.T) {
		expect(t, a.claim(map[string]any{"emailProof": a.inv.EmailProof, "inbox": b.inv.Inbox}), 403, "proof-mismatch")
	})

	var first map[string]any
	t.Run("claim", func(t *testing.T) {
		r := a.claim(good)
		expect(t, r, 200, "")
		first = r.json(t)
		if first["assurance"] != "recipient-email-proof-possession" || first["countsAsSignature"] != false {
			t.Fatalf("%s", r.body)
		}
		if !strings.HasPrefix(first["participantToken"].(string), "csp_") {
			t.Fatal("token prefix")
		}
		binding := first["binding"].(map[string]any)
		_, d, err := canon.DigestOf(binding)
		if err != nil || d != first["bindingDigest"] {
			t.Fatalf("bindingDigest %v is not the digest of binding (%s)", first["bindingDigest"], d)
		}
		if binding["runtime_endpoint"] != "https://agent.example/hook" || binding["inbox"] != a.inv.Inbox || binding["revision_digest"] != c.RevisionDigest {
			t.Fatalf("binding %v", binding)
		}
	})
	t.Run("identical replay, inbox case and spaces normalized", func(t *testing.T) {
		r := a.claim(map[string]any{"emailProof": a.inv.EmailProof, "inbox": "  " + strings.ToUpper(a.inv.Inbox) + " ", "runtimeEndpoint": "https://agent.example/hook"})
		expect(t, r, 200, "")
		m := r.json(t)
		if m["participantToken"] != first["participantToken"] || m["bindingDigest"] != first["bindingDigest"] {
			t.Fatal("replay returned another token or digest")
		}
	})
	t.Run("replay with a new session", func(t *testing.T) {
		a.session = a.exchange().json(t)["sessionToken"].(string)
		m := a.claim(good).json(t)
		if m["participantToken"] != first["participantToken"] {
			t.Fatal("new session, other token")
		}
	})
	t.Run("changed endpoint", func(t *testing.T) {
		expect(t, a.claim(map[string]any{"emailProof": a.inv.EmailProof, "inbox": a.inv.Inbox}), 409, "claim-conflict")
		expect(t, a.claim(map[string]any{"emailProof": a.inv.EmailProof, "inbox": a.inv.Inbox, "runtimeEndpoint": "https://agent.example/other"}), 409, "claim-conflict")
	})
	t.Run("session expires after 20 minutes", func(t *testing.T) {
		s.Clock.Advance(20*time.Minute + time.Second)
		r := a.claim(good)
		expect(t, r, 401, "unauthorized")
	})
}

func TestClaimAfterRevocationIsNotFound(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Revoked claim", s.future())
	a := s.agent(c.Participants[0].InvitationID)
	a.session = a.exchange().json(t)["sessionToken"].(string)
	expect(t, s.do("POST", "/api/v1/admin/participants/"+c.Participants[0].ParticipantID+"/revoke", operator(), nil), 200, "")
	expect(t, a.claim(map[string]any{"emailProof": a.inv.EmailProof, "inbox": a.inv.Inbox}), 404, "not-found")
	// the invitation is judged before the body
	expect(t, a.claimInvalid(`{"emailProof": 12}`), 404, "not-found")
}
