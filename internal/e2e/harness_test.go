package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/contract"
	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/ingest"
	"github.com/consensus-md/consensus/internal/servertest"
)

const operatorToken = "cso_test-operator-token-0123456789abcdef"

// server is one running consensusd with the helpers the suite speaks
// through; every request goes through its contract-validating Client.
type server struct {
	*servertest.Server
	t testing.TB
}

// startServer runs consensusd in-process on 127.0.0.1:0 with its own
// database and Maildir (unless opts name those of a replica), and stops it
// when the test ends.
func startServer(t testing.TB, opts ...servertest.Options) *server {
	t.Helper()
	var o servertest.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	o.OperatorToken = operatorToken
	return &server{Server: servertest.New(t, o), t: t}
}

// response is a received answer with its body read.
type response struct {
	*http.Response
	body []byte
}

func (r *response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

// do sends a request; body may be nil, a string, []byte or a value to encode.
func (s *server) do(method, path string, headers map[string]string, body any) *response {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(js)
	}
	url := path
	if strings.HasPrefix(path, "/") {
		url = s.URL + path
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return &response{Response: resp, body: b}
}

// invalid marks a request the test sends malformed on purpose: the
// contract transport then skips validating the request (it still validates
// the response).
func invalid(h map[string]string) map[string]string {
	out := map[string]string{contract.SkipRequestHeader: "1"}
	for k, v := range h {
		out[k] = v
	}
	return out
}

// expect fails unless r has the status (and, for problems, the code).
func expect(t testing.TB, r *response, status int, code string) {
	t.Helper()
	if r.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d\n%s", r.Request.Method, r.Request.URL.Path, r.StatusCode, status, r.body)
	}
	if code != "" {
		m := r.json(t)
		if m["code"] != code {
			t.Fatalf("%s %s: code %v, want %s\n%s", r.Request.Method, r.Request.URL.Path, m["code"], code, r.body)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/problem+json; charset=utf-8" {
			t.Fatalf("problem Content-Type %q", ct)
		}
		if m["type"] != "" && !strings.HasSuffix(fmt.Sprint(m["type"]), "/problems/"+code) {
			t.Fatalf("problem type %v", m["type"])
		}
	}
}

func operator() map[string]string {
	return map[string]string{"Authorization": "Bearer " + operatorToken}
}

// participantSpec describes one invited participant.
type participantSpec struct {
	Name     string
	Kind     string
	Required bool
}

// create makes an agreement through the operator API.
func (s *server) create(title string, deadline time.Time, parts ...participantSpec) *servertest.Created {
	s.t.Helper()
	if len(parts) == 0 {
		parts = []participantSpec{{"Alpha", "agent", true}, {"Beta", "agent", true}}
	}
	var ps []servertest.Participant
	for i, p := range parts {
		ps = append(ps, servertest.Participant{DisplayName: p.Name, Kind: p.Kind, Email: fmt.Sprintf("p%d-%s@agents.example", i, strings.ToLower(p.Name)), Required: p.Required})
	}
	c, err := s.CreateAgreement(context.Background(), servertest.Agreement{
		Title: title, Objective: "Decide whether to proceed.", Rules: []string{"Be brief."}, Deadline: deadline, Participants: ps,
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// invitation waits for the invitation email of invitationID in the Maildir
// and parses it with the real ingester (all five checks).
func (s *server) invitation(invitationID string) *envelope.Invitation {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(s.Maildir, "new", "*"))
		var found *envelope.Invitation
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil || !bytes.Contains(raw, []byte(invitationID)) {
				continue
			}
			inv, err := ingest.ParseMessageBytes(raw, envelope.Policy{Origin: s.Origin, AllowHTTPLoopback: true})
			if errors.Is(err, ingest.ErrNoInvitation) {
				continue // another email of the invitation: a notice, a reminder, the outcome
			}
			if err != nil {
				s.t.Fatalf("invitation email for %s refused: %v", invitationID, err)
			}
			found = inv
		}
		if found != nil {
			return found
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("no invitation email for %s", invitationID)
	return nil
}

// newestInvitation waits for an invitation email of invitationID whose
// secret is not notSecret (the email a resend queued).
func (s *server) newestInvitation(invitationID, notSecret string) *envelope.Invitation {
	s.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(s.Maildir, "new", "*"))
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil || !bytes.Contains(raw, []byte(invitationID)) {
				continue
			}
			inv, err := ingest.ParseMessageBytes(raw, envelope.Policy{Origin: s.Origin, AllowHTTPLoopback: true})
			if err == nil && inv.Secret != notSecret {
				return inv
			}
		}
	}
	s.t.Fatalf("no fresh invitation email for %s", invitationID)
	return nil
}

func (s *server) agentPath(invitationID, action string) string {
	return "/api/v1/agent/invitations/" + invitationID + "/" + action
}

// agent is one invited participant driving the API.
type agent struct {
	s       *server
	inv     *envelope.Invitation
	session string
	token   string
	digest  string
	pid     string
}

func (s *server) agent(invitationID string) *agent {
	return &agent{s: s, inv: s.invitation(invitationID)}
}

func (a *agent) exchange() *response {
	return a.s.do("POST", a.s.agentPath(a.inv.InvitationID, "exchange"), nil, map[string]string{"secret": a.inv.Secret})
}

// join exchanges and claims, failing the test on any error.
func (a *agent) join() *agent {
	a.s.t.Helper()
	r := a.exchange()
	expect(a.s.t, r, 200, "")
	m := r.json(a.s.t)
	a.session, a.digest = m["sessionToken"].(string), m["revisionDigest"].(string)
	r = a.claim(map[string]any{"emailProof": a.inv.EmailProof, "inbox": a.inv.Inbox})
	expect(a.s.t, r, 200, "")
	m = r.json(a.s.t)
	a.token, a.pid = m["participantToken"].(string), m["participantId"].(string)
	return a
}

func (a *agent) claim(body any) *response {
	return a.s.do("POST", a.s.agentPath(a.inv.InvitationID, "claim"), map[string]string{"Authorization": "Consensus-Session " + a.session}, body)
}

// claimInvalid sends a claim body that is malformed on purpose.
func (a *agent) claimInvalid(body any) *response {
	return a.s.do("POST", a.s.agentPath(a.inv.InvitationID, "claim"), invalid(map[string]string{"Authorization": "Consensus-Session " + a.session}), body)
}

func (a *agent) auth() map[string]string {
	return map[string]string{"Authorization": "Consensus-Participant " + a.token}
}

func (a *agent) room() *response {
	return a.s.do("GET", a.s.agentPath(a.inv.InvitationID, "room"), a.auth(), nil)
}

func (a *agent) post(key, action, body string) *response {
	h := a.auth()
	h["Idempotency-Key"] = key
	return a.s.do("POST", a.s.agentPath(a.inv.InvitationID, "events"), h, map[string]any{"action": action, "body": body, "revision": 1, "digest": a.digest})
}

func (a *agent) artifact(method string) *response {
	return a.s.do(method, a.s.agentPath(a.inv.InvitationID, "artifact"), a.auth(), nil)
}

// future is a deadline comfortably ahead of the (possibly advanced) clock.
func (s *server) future() time.Time { return s.Clock.Now().Add(48 * time.Hour).Truncate(time.Second) }
