package e2e

import (
	"strings"
	"testing"
)

// TestCredentialsNeverLeak drives a whole agreement and then checks that no
// secret, proof or token appears in the server's logs, and that each
// credential appears in no API response other than the one issuing it.
func TestCredentialsNeverLeak(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	var seen []*response
	record := func(r *response) *response { seen = append(seen, r); return r }

	c := s.create("Leak check", s.future())
	a := s.agent(c.Participants[0].InvitationID)
	b := s.agent(c.Participants[1].InvitationID)
	ex := record(a.exchange())
	a.session = ex.json(t)["sessionToken"].(string)
	a.digest = ex.json(t)["revisionDigest"].(string)
	cl := record(a.claim(map[string]any{"emailProof": a.inv.EmailProof, "inbox": a.inv.Inbox}))
	a.token = cl.json(t)["participantToken"].(string)
	b.join()
	record(a.room())
	record(a.post("leak-comment-1", "comment", "fine"))
	record(a.post("leak-agree-01", "agree", ""))
	record(b.post("leak-agree-02", "agree", ""))
	record(a.artifact("GET"))
	record(s.do("GET", "/api/v1/admin/agreements/"+c.AgreementID, operator(), nil))
	record(s.do("GET", "/api/v1/admin/agreements", operator(), nil))
	// failures must not echo what was sent either
	record(s.do("POST", s.agentPath(a.inv.InvitationID, "exchange"), nil, map[string]string{"secret": a.inv.Secret + "x"}))
	record(a.claim(map[string]any{"emailProof": a.inv.EmailProof + "x", "inbox": a.inv.Inbox}))
	record(s.do("GET", s.agentPath(a.inv.InvitationID, "room"), map[string]string{"Authorization": "Consensus-Participant " + a.token + "x"}, nil))
	record(s.do("GET", s.agentPath(b.inv.InvitationID, "room"), map[string]string{"Authorization": "Consensus-Participant " + a.token}, nil))

	secrets := map[string]string{
		"invite secret": a.inv.Secret, "invite secret (bare)": strings.TrimPrefix(a.inv.Secret, "csi_"),
		"email proof": a.inv.EmailProof, "session token": a.session, "participant token": a.token,
		"other participant token": b.token, "operator token": operatorToken,
	}
	logs := s.Logs.String()
	if !strings.Contains(logs, `"route":"/api/v1/agent/invitations/{invitationId}/claim"`) {
		t.Fatal("the request log is missing: the scan would prove nothing")
	}
	for name, v := range secrets {
		if strings.Contains(logs, v) {
			t.Errorf("%s appears in the logs", name)
		}
		for _, r := range seen {
			if !strings.Contains(string(r.body), v) {
				continue
			}
			issuer := (name == "session token" && r == ex) || (name == "participant token" && r == cl)
			if !issuer {
				t.Errorf("%s appears in the response to %s %s", name, r.Request.Method, r.Request.URL.Path)
			}
		}
	}
}
