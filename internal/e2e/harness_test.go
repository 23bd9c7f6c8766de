package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/contract"
	"github.com/consensus-md/consensus/internal/daemon"
	"github.com/consensus-md/consensus/internal/ingest"
	"github.com/consensus-md/consensus/internal/outbox"
	"github.com/consensus-md/consensus/internal/pgtest"
)

const operatorToken = "cso_test-operator-token-0123456789abcdef"

// lockedBuffer collects the server's log lines for scanning.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// clock is a settable clock: real time plus an offset.
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// server is one running consensusd.
type server struct {
	t       testing.TB
	origin  string
	addr    string // where this replica listens; origin is what it publishes
	maildir string
	logs    *lockedBuffer
	clock   *clock
	http    *http.Client
	dbURL   string
}

type serverOptions struct {
	rateLimit string
	// dbURL, origin and maildir, when set, make this server a second
	// replica of another: same database, public origin and mail drop.
	dbURL, origin, maildir string
}

// startServer runs consensusd in-process on 127.0.0.1:0 with its own
// database and Maildir, and stops it when the test ends.
func startServer(t testing.TB, opts ...serverOptions) *server {
	t.Helper()
	var o serverOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.rateLimit == "" {
		o.rateLimit = "0"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	origin, dbURL := o.origin, o.dbURL
	if origin == "" {
		origin = "http://" + ln.Addr().String()
	}
	if dbURL == "" {
		dbURL = pgtest.URL(t)
	}
	maildir := o.maildir
	if maildir == "" {
		maildir = filepath.Join(t.TempDir(), "mail")
	}
	env := map[string]string{
		"CONSENSUS_ENV": "local", "DATABASE_URL": dbURL, "CONSENSUS_LISTEN": ln.Addr().String(),
		"CONSENSUS_PUBLIC_ORIGIN": origin, "CONSENSUS_OPERATOR_TOKEN": operatorToken,
		"CONSENSUS_TOKEN_KEY": strings.Repeat("ab", 32), "CONSENSUS_MAIL_URL": "maildir://" + maildir,
		"CONSENSUS_RATE_LIMIT": o.rateLimit,
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Version = "test"
	logs := &lockedBuffer{}
	clk := &clock{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		done <- daemon.Run(ctx, cfg, slog.New(slog.NewJSONHandler(logs, nil)), daemon.Options{
			Listener: ln, Ready: ready, Now: clk.Now, Outbox: outbox.Worker{Poll: 20 * time.Millisecond},
		})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("consensusd stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("consensusd did not start")
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("consensusd: %v", err)
		}
	})
	// Every request and response of the suite is checked against the
	// published openapi.json: an undocumented status, header or field fails.
	v, err := contract.Load(consensus.OpenAPI, origin)
	if err != nil {
		t.Fatal(err)
	}
	transport := v.Transport(t, &http.Transport{MaxIdleConnsPerHost: 64})
	return &server{t: t, origin: origin, addr: "http://" + ln.Addr().String(), maildir: maildir, logs: logs, clock: clk, dbURL: dbURL,
		http: &http.Client{Timeout: 30 * time.Second, Transport: transport}}
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
		url = s.addr + path
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
	resp, err := s.http.Do(req)
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

type created struct {
	AgreementID    string `json:"agreementId"`
	RevisionDigest string `json:"revisionDigest"`
	Participants   []struct {
		ParticipantID string `json:"participantId"`
		InvitationID  string `json:"invitationId"`
		Email         string `json:"email"`
		Kind          string `json:"kind"`
	} `json:"participants"`
}

// create makes an agreement through the operator API.
func (s *server) create(title string, deadline time.Time, parts ...participantSpec) created {
	s.t.Helper()
	if len(parts) == 0 {
		parts = []participantSpec{{"Alpha", "agent", true}, {"Beta", "agent", true}}
	}
	var ps []map[string]any
	for i, p := range parts {
		ps = append(ps, map[string]any{"displayName": p.Name, "kind": p.Kind, "email": fmt.Sprintf("p%d-%s@agents.example", i, strings.ToLower(p.Name)), "required": p.Required})
	}
	r := s.do("POST", "/api/v1/admin/agreements", operator(), map[string]any{
		"title": title, "objective": "Decide whether to proceed.", "rules": []string{"Be brief."},
		"deadline": deadline.UTC().Format(time.RFC3339), "participants": ps,
	})
	expect(s.t, r, http.StatusCreated, "")
	var c created
	if err := json.Unmarshal(r.body, &c); err != nil {
		s.t.Fatal(err)
	}
	return c
}

// invitation waits for the invitation email of invitationID in the Maildir
// and parses it with the real ingester (all five checks).
func (s *server) invitation(invitationID string) *ingest.Invitation {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(s.maildir, "new", "*"))
		var found *ingest.Invitation
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil || !bytes.Contains(raw, []byte(invitationID)) {
				continue
			}
			inv, err := ingest.ParseMessageBytes(raw, ingest.Policy{Origin: s.origin, AllowHTTPLoopback: true})
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
func (s *server) newestInvitation(invitationID, notSecret string) *ingest.Invitation {
	s.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(s.maildir, "new", "*"))
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil || !bytes.Contains(raw, []byte(invitationID)) {
				continue
			}
			inv, err := ingest.ParseMessageBytes(raw, ingest.Policy{Origin: s.origin, AllowHTTPLoopback: true})
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
	inv     *ingest.Invitation
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
func (s *server) future() time.Time { return s.clock.Now().Add(48 * time.Hour).Truncate(time.Second) }
