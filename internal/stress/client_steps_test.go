package stress

// The steps the stress tests take over HTTP: an operator creating an
// agreement, revoking and resending; a participant joining, posting and
// reading its room.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/proctest"
)

// ---- operator ----

// spec is one participant of an agreement to create.
type spec struct {
	Name     string `json:"displayName"`
	Kind     string `json:"kind"`
	Email    string `json:"email"`
	Required bool   `json:"required"`
}

// agreementBody is an operator create body; participants get unique
// addresses unless they carry one.
func agreementBody(title, objective string, rules []string, parts ...spec) []byte {
	tag := proctest.RandomHex(4)
	for i := range parts {
		if parts[i].Kind == "" {
			parts[i].Kind = "agent"
		}
		if parts[i].Email == "" {
			parts[i].Email = fmt.Sprintf("p%d-%s@agents.example", i, tag)
		}
	}
	if rules == nil {
		rules = []string{}
	}
	b, err := json.Marshal(map[string]any{
		"title": title, "objective": objective, "rules": rules,
		"deadline":     time.Now().Add(72 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339),
		"participants": parts,
	})
	if err != nil {
		panic(err)
	}
	return b
}

// created is the operator's answer to a create.
type created struct {
	AgreementID    string `json:"agreementId"`
	RevisionDigest string `json:"revisionDigest"`
	Participants   []struct {
		ParticipantID string `json:"participantId"`
		InvitationID  string `json:"invitationId"`
		Email         string `json:"email"`
		Required      bool   `json:"required"`
	} `json:"participants"`
}

func (v *venue) create(t testing.TB, base string, body []byte) created {
	t.Helper()
	r := v.post(base+"/api/v1/admin/agreements", v.opHeader(), body)
	wantStatus(t, "create agreement", r, http.StatusCreated)
	var c created
	if err := json.Unmarshal(r.Body, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func (v *venue) revoke(base, participantID string) *reply {
	return v.do(request{Method: "POST", URL: base + "/api/v1/admin/participants/" + participantID + "/revoke", Header: v.opHeader()})
}

func (v *venue) resend(base, invitationID string) *reply {
	return v.do(request{Method: "POST", URL: base + "/api/v1/admin/invitations/" + invitationID + "/resend", Header: v.opHeader()})
}

// ---- participant ----

// member is an invited participant as the test drives it.
type member struct {
	Inv     invite
	Session string
	Token   string
	Digest  string
	PID     string
	Binding string
}

func exchangeBody(secret string) []byte {
	b, _ := json.Marshal(map[string]string{"secret": secret})
	return b
}

func claimBody(proof, inbox string) []byte {
	b, _ := json.Marshal(map[string]string{"emailProof": proof, "inbox": inbox})
	return b
}

func eventBody(action, body string, revision int, digest string) []byte {
	b, _ := json.Marshal(map[string]any{"action": action, "body": body, "revision": revision, "digest": digest})
	return b
}

// exchange trades m's secret for a session.
func (v *venue) exchange(t testing.TB, base string, m *member) {
	t.Helper()
	r := v.post(agentURL(base, m.Inv.InvitationID, "exchange"), nil, exchangeBody(m.Inv.Secret))
	wantStatus(t, "exchange", r, 200)
	j := r.JSON(t)
	m.Session, m.Digest = j["sessionToken"].(string), j["revisionDigest"].(string)
}

// claim claims m's slot with the proof of its email.
func (v *venue) claim(t testing.TB, base string, m *member) {
	t.Helper()
	r := v.post(agentURL(base, m.Inv.InvitationID, "claim"), hdr("Authorization", "Consensus-Session "+m.Session), claimBody(m.Inv.Proof, m.Inv.Inbox))
	wantStatus(t, "claim", r, 200)
	j := r.JSON(t)
	m.Token, m.PID, m.Binding = j["participantToken"].(string), j["participantId"].(string), j["bindingDigest"].(string)
}

// join reads the invitation email of invitationID, exchanges and claims.
func (v *venue) join(t testing.TB, base, invitationID string) *member {
	t.Helper()
	m := &member{Inv: v.mail.wait(t, invitationID, nil)}
	v.exchange(t, base, m)
	v.claim(t, base, m)
	return m
}

// invited reads the invitation email without using it.
func (v *venue) invited(t testing.TB, invitationID string) *member {
	t.Helper()
	return &member{Inv: v.mail.wait(t, invitationID, nil)}
}

func (v *venue) postEvent(base string, m *member, key, action, body string) *reply {
	return v.post(agentURL(base, m.Inv.InvitationID, "events"), hdr("Authorization", participantAuth(m.Token), "Idempotency-Key", key), eventBody(action, body, 1, m.Digest))
}

func (v *venue) room(base string, m *member) *reply {
	return v.get(agentURL(base, m.Inv.InvitationID, "room"), hdr("Authorization", participantAuth(m.Token)))
}
