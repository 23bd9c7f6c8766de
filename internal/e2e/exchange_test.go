package e2e

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestExchange(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Exchange", s.future())
	a := s.agent(c.Participants[0].InvitationID)
	path := s.agentPath(a.inv.InvitationID, "exchange")

	t.Run("body secret", func(t *testing.T) {
		r := a.exchange()
		expect(t, r, 200, "")
		m := r.json(t)
		for _, k := range []string{"sessionToken", "sessionExpiresAt", "canonicalRevision", "markdown", "revisionNumber", "revisionDigest", "markdownDigest", "invitationId", "agreementId", "participant", "actions"} {
			if _, ok := m[k]; !ok {
				t.Errorf("missing %s", k)
			}
		}
		if !strings.HasPrefix(m["sessionToken"].(string), "css_") || m["revisionDigest"] != c.RevisionDigest {
			t.Errorf("token or digest: %v %v", m["sessionToken"], m["revisionDigest"])
		}
		exp, err := time.Parse(time.RFC3339Nano, m["sessionExpiresAt"].(string))
		if err != nil || exp.After(s.Clock.Now().Add(20*time.Minute+time.Second)) {
			t.Errorf("sessionExpiresAt %v beyond 20 minutes", m["sessionExpiresAt"])
		}
		actions := m["actions"].(map[string]any)
		if actions["claim"] != s.Origin+path[:len(path)-len("exchange")]+"claim" {
			t.Errorf("claim action %v", actions["claim"])
		}
		if r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("headers %v", r.Header)
		}
	})
	t.Run("header secret, with or without prefix", func(t *testing.T) {
		expect(t, s.do("POST", path, map[string]string{"Authorization": "Consensus-Invite " + a.inv.Secret}, nil), 200, "")
		expect(t, s.do("POST", path, map[string]string{"Authorization": "Consensus-Invite " + strings.TrimPrefix(a.inv.Secret, "csi_")}, nil), 200, "")
	})
	t.Run("both, equal", func(t *testing.T) {
		expect(t, s.do("POST", path, map[string]string{"Authorization": "Consensus-Invite " + a.inv.Secret}, map[string]string{"secret": a.inv.Secret}), 200, "")
	})
	t.Run("both, different", func(t *testing.T) {
		expect(t, s.do("POST", path, map[string]string{"Authorization": "Consensus-Invite " + a.inv.Secret}, map[string]string{"secret": "csi_other"}), 400, "invalid-request")
	})
	t.Run("no credential", func(t *testing.T) {
		expect(t, s.do("POST", path, nil, nil), 400, "invalid-request")
		expect(t, s.do("POST", path, nil, map[string]string{}), 400, "invalid-request")
	})
	t.Run("unknown field", func(t *testing.T) {
		expect(t, s.do("POST", path, invalid(nil), map[string]string{"secret": a.inv.Secret, "extra": "x"}), 400, "invalid-request")
	})
	t.Run("body limit", func(t *testing.T) {
		pad := `{"secret":"` + a.inv.Secret + `"}`
		ok := pad + strings.Repeat(" ", 1024-len(pad))
		expect(t, s.do("POST", path, nil, ok), 200, "")
		expect(t, s.do("POST", path, nil, ok+" "), 413, "payload-too-large")
	})
	t.Run("wrong scheme", func(t *testing.T) {
		expect(t, s.do("POST", path, map[string]string{"Authorization": "Bearer " + a.inv.Secret}, nil), 400, "invalid-request")
	})
}

// TestExchangeGenericNotFound: every way an invitation can be unusable
// gives the same 404, byte for byte except Date and X-Request-Id.
func TestExchangeGenericNotFound(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Generic 404", s.future(), participantSpec{"Agent", "agent", true}, participantSpec{"Person", "human", false}, participantSpec{"Revoked", "agent", false})
	a := s.agent(c.Participants[0].InvitationID)
	human := s.invitation(c.Participants[1].InvitationID)
	revoked := s.invitation(c.Participants[2].InvitationID)
	expect(t, s.do("POST", "/api/v1/admin/participants/"+c.Participants[2].ParticipantID+"/revoke", operator(), nil), 200, "")

	sc := s.create("Expiring", s.Clock.Now().Add(time.Hour))
	expiring := s.agent(sc.Participants[0].InvitationID)

	cases := map[string]*response{
		"wrong secret":         s.do("POST", s.agentPath(a.inv.InvitationID, "exchange"), nil, map[string]string{"secret": "csi_" + strings.Repeat("A", 43)}),
		"wrong secret, odd":    s.do("POST", s.agentPath(a.inv.InvitationID, "exchange"), nil, map[string]string{"secret": "?"}),
		"unknown id":           s.do("POST", s.agentPath("6f1d8a9e-2b3c-4d5e-8f90-123456789abc", "exchange"), nil, map[string]string{"secret": a.inv.Secret}),
		"malformed id":         s.do("POST", s.agentPath("not-a-uuid", "exchange"), invalid(nil), map[string]string{"secret": a.inv.Secret}),
		"upper-case id":        s.do("POST", s.agentPath(strings.ToUpper(a.inv.InvitationID), "exchange"), invalid(nil), map[string]string{"secret": a.inv.Secret}),
		"human on agent route": s.do("POST", s.agentPath(human.InvitationID, "exchange"), nil, map[string]string{"secret": human.Secret}),
		"revoked":              s.do("POST", s.agentPath(revoked.InvitationID, "exchange"), nil, map[string]string{"secret": revoked.Secret}),
		"another's secret":     s.do("POST", s.agentPath(a.inv.InvitationID, "exchange"), nil, map[string]string{"secret": revoked.Secret}),
		"header, wrong secret": s.do("POST", s.agentPath(a.inv.InvitationID, "exchange"), map[string]string{"Authorization": "Consensus-Invite nope"}, nil),
	}
	expect(t, expiring.exchange(), 200, "")
	s.Clock.Advance(time.Hour) // the deadline passes
	cases["expired"] = expiring.exchange()
	var ref *response
	var refName string
	for name, r := range cases {
		expect(t, r, 404, "not-found")
		if ref == nil {
			ref, refName = r, name
			continue
		}
		if !bytes.Equal(r.body, ref.body) {
			t.Errorf("%s body differs from %s:\n%s\n%s", name, refName, r.body, ref.body)
		}
		if d := headerDiff(r.Header, ref.Header); d != "" {
			t.Errorf("%s headers differ from %s: %s", name, refName, d)
		}
	}
	if bytes.Contains(ref.body, []byte(a.inv.InvitationID)) || bytes.Contains(ref.body, []byte("/api/")) {
		t.Errorf("404 body names the path or id: %s", ref.body)
	}
}

// headerDiff compares two header sets, ignoring Date and X-Request-Id.
func headerDiff(a, b http.Header) string {
	for _, h := range []http.Header{a, b} {
		for k := range h {
			if k == "Date" || k == "X-Request-Id" {
				continue
			}
			if strings.Join(a.Values(k), ",") != strings.Join(b.Values(k), ",") {
				return k + ": " + strings.Join(a.Values(k), ",") + " vs " + strings.Join(b.Values(k), ",")
			}
		}
	}
	return ""
}

func TestSessionNeverOutlivesInvitation(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	deadline := s.Clock.Now().Add(5 * time.Minute).Truncate(time.Second).Add(time.Second)
	c := s.create("Short", deadline)
	a := s.agent(c.Participants[0].InvitationID)
	m := a.exchange().json(t)
	if m["sessionExpiresAt"] != deadline.UTC().Format(time.RFC3339) {
		t.Fatalf("sessionExpiresAt %v, want the deadline %v", m["sessionExpiresAt"], deadline.UTC().Format(time.RFC3339))
	}
}
