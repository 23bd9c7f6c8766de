package fwtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/quotedprintable"
	"net/http"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/servertest"
)

// Invite is what an invited participant holds after reading its email.
type Invite struct {
	InvitationID  string
	ParticipantID string
	Secret        string
	EmailProof    string
	Inbox         string
}

// envelope is the part of invitation-email/v1 an agent uses.
type envelope struct {
	InvitationID string `json:"invitation_id"`
	Inbox        string `json:"inbox"`
	InviteURI    string `json:"invite_uri"`
	AgentClaim   struct {
		EmailProof string `json:"email_proof"`
	} `json:"agent_claim"`
}

// ReadInvite waits up to ten seconds for the invitation email of
// invitationID in s's Maildir and returns its credentials. It reads the
// message as any mail client would (RFC 5322, quoted-printable), not
// through the service's own parser, so it also checks what was sent.
func ReadInvite(t testing.TB, s *servertest.Server, invitationID string) Invite {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(s.Maildir, "new", "*"))
		for _, f := range files {
			if inv, ok := inviteFrom(f, invitationID); ok {
				return inv
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no invitation email for %s in %s", invitationID, s.Maildir)
	return Invite{}
}

func inviteFrom(path, invitationID string) (Invite, bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Invite{}, false
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return Invite{}, false
	}
	var body io.Reader = msg.Body
	if strings.EqualFold(msg.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		body = quotedprintable.NewReader(msg.Body)
	}
	var block strings.Builder
	in := false
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case line == "---BEGIN CONSENSUS INVITATION V1---":
			in = true
		case line == "---END CONSENSUS INVITATION V1---":
			in = false
		case in:
			block.WriteString(line + "\n")
		}
	}
	var env envelope
	if json.Unmarshal([]byte(block.String()), &env) != nil || env.InvitationID != invitationID {
		return Invite{}, false
	}
	_, secret, ok := strings.Cut(env.InviteURI, "#secret=")
	if !ok {
		return Invite{}, false
	}
	return Invite{InvitationID: invitationID, Secret: secret, EmailProof: env.AgentClaim.EmailProof, Inbox: env.Inbox}, true
}

// Agreement locks an agreement with one required agent participant (and
// an optional human) through the operator API and returns the agent's
// invitation.
func Agreement(t testing.TB, s *servertest.Server, title string) Invite {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := s.CreateAgreement(ctx, servertest.Agreement{
		Title: title, Objective: "Agree on the release window for version 2.", Rules: []string{"Weekdays only"},
		Deadline: s.Clock.Now().Add(48 * time.Hour).Truncate(time.Second),
		Participants: []servertest.Participant{
			{DisplayName: "Builder agent", Kind: "agent", Email: "builder@agentmail.to", Required: true},
			{DisplayName: "Observer", Kind: "human", Email: "observer@example.org", Required: false},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	inv := ReadInvite(t, s, c.Participants[0].InvitationID)
	inv.ParticipantID = c.Participants[0].ParticipantID
	return inv
}

// Revoke revokes a participant through the operator API.
func Revoke(t testing.TB, s *servertest.Server, participantID string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/api/v1/admin/participants/"+participantID+"/revoke", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.OperatorToken)
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: HTTP %d", resp.StatusCode)
	}
}

// Join exchanges and claims inv over plain HTTP through s.Client (the
// contract-checking client) and returns the participant token.
func Join(t testing.TB, s *servertest.Server, inv Invite) string {
	t.Helper()
	base := s.URL + "/api/v1/agent/invitations/" + inv.InvitationID
	var ex struct {
		SessionToken string `json:"sessionToken"`
	}
	post(t, s, base+"/exchange", "", map[string]string{"secret": inv.Secret}, &ex)
	var cl struct {
		ParticipantToken string `json:"participantToken"`
	}
	post(t, s, base+"/claim", "Consensus-Session "+ex.SessionToken, map[string]string{"emailProof": inv.EmailProof, "inbox": inv.Inbox}, &cl)
	if cl.ParticipantToken == "" {
		t.Fatal("claim returned no participant token")
	}
	return cl.ParticipantToken
}

func post(t testing.TB, s *servertest.Server, url, auth string, body, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: HTTP %d: %s", strings.TrimPrefix(url, s.URL), resp.StatusCode, answer)
	}
	if err := json.Unmarshal(answer, out); err != nil {
		t.Fatal(fmt.Errorf("POST %s: %w", strings.TrimPrefix(url, s.URL), err))
	}
}
