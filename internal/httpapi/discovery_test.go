package httpapi_test

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
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/contract"
	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/httpapi"
	"github.com/consensus-md/consensus/internal/servertest"
	"github.com/consensus-md/consensus/internal/venue"
)

// testServer is consensusd in-process (servertest): its URL is also its
// public origin, and its client validates every exchange against
// openapi.json.
type testServer struct {
	origin string
	client *http.Client
	srv    *servertest.Server
}

func startServer(t *testing.T, opts servertest.Options) *testServer {
	t.Helper()
	srv := servertest.New(t, opts)
	return &testServer{origin: srv.URL, client: srv.Client, srv: srv}
}

// do sends one request; headers alternate name, value.
func (s *testServer) do(t *testing.T, method, path string, body []byte, headers ...string) (*http.Response, []byte) {
	t.Helper()
	return httpapi.DoRequest(t, s.client, s.origin, method, path, body, headers...)
}

func (s *testServer) mustStatus(t *testing.T, want int, method, path string, body []byte, headers ...string) []byte {
	t.Helper()
	resp, b := s.do(t, method, path, body, headers...)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d", method, strings.SplitN(path, "?", 2)[0], resp.StatusCode, want)
	}
	return b
}

func TestDiscoveryDocuments(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertest.Options{RateLimit: 120})

	for _, path := range []string{"/.well-known/consensus-agent", "/.well-known/api-catalog", "/openapi.json", "/openapi-agent.json", "/llms.txt",
		"/llms-full.txt", "/api/health", "/problems/not-found", "/invite/7d3c5a8e-4b1f-4c2d-9e6a-0f1b2c3d4e5f"} {
		resp, body := s.do(t, http.MethodGet, path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", path, resp.StatusCode)
		}
		if bytes.Contains(body, []byte("https://consensus.md")) && path != "/llms-full.txt" {
			t.Errorf("GET %s still names https://consensus.md instead of the configured origin", path)
		}
	}
	if resp, _ := s.do(t, http.MethodHead, "/.well-known/api-catalog", nil); resp.StatusCode != http.StatusOK ||
		resp.Header.Get("Content-Type") != `application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"` {
		t.Errorf("HEAD api-catalog: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// Deliberately outside the documented parameters: only the answer is checked.
	for _, path := range []string{"/.well-known/consensus-agent", "/openapi.json", "/openapi-agent.json", "/llms.txt", "/llms-full.txt"} {
		get, body := s.do(t, http.MethodGet, path, nil)
		head, none := s.do(t, http.MethodHead, path, nil)
		if head.StatusCode != http.StatusOK || len(none) != 0 || head.Header.Get("Content-Length") != strconv.Itoa(len(body)) ||
			head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("HEAD %s: %d, %d body bytes, Content-Length %q for %d", path, head.StatusCode, len(none), head.Header.Get("Content-Length"), len(body))
		}
	}
	s.mustStatus(t, http.StatusNotFound, http.MethodGet, "/schemas/nothing/v1", nil, contract.SkipRequestHeader, "1")
	s.mustStatus(t, http.StatusNotFound, http.MethodGet, "/invite/not-a-uuid", nil, contract.SkipRequestHeader, "1")

	for _, name := range []string{"invitation-email/v1", "agreement/v1", "room-command/v1", "room-command/v2", "participant-binding/v1"} {
		var doc struct {
			ID string `json:"$id"`
		}
		if err := json.Unmarshal(s.mustStatus(t, 200, http.MethodGet, "/schemas/"+name, nil), &doc); err != nil {
			t.Fatal(err)
		}
		if want := s.origin + "/schemas/" + name; doc.ID != want {
			t.Errorf("schema %s: $id %q, want %q", name, doc.ID, want)
		}
	}

	var catalog struct {
		Linkset []map[string]json.RawMessage `json:"linkset"`
	}
	if err := json.Unmarshal(s.mustStatus(t, 200, http.MethodGet, "/.well-known/api-catalog", nil), &catalog); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"service-desc", "service-doc", "status"} {
		var links []struct{ Href string }
		if err := json.Unmarshal(catalog.Linkset[0][rel], &links); err != nil || len(links) == 0 {
			t.Fatalf("api-catalog: relation %s: %v", rel, err)
		}
		for _, l := range links {
			s.mustStatus(t, 200, http.MethodGet, strings.TrimPrefix(l.Href, s.origin), nil)
		}
	}
}

var llmsLink = regexp.MustCompile(`^- \[[^\]]+\]\(([^)\s]+)\)(: .+)?$`)

// TestLLMsTxt checks the llmstxt.org shape (one H1 first, a blockquote
// summary, H2 sections of link lists) and that every link resolves here.
func TestLLMsTxt(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertest.Options{RateLimit: 120})
	body := s.mustStatus(t, 200, http.MethodGet, "/llms.txt", nil)
	sc := bufio.NewScanner(bytes.NewReader(body))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "# ") {
		t.Fatal("llms.txt must start with an H1")
	}
	h1, quote, sections, links := 0, false, 0, 0
	inSection := false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "# "):
			h1++
		case strings.HasPrefix(l, "> "):
			if sections > 0 {
				t.Errorf("line %d: the blockquote summary must come before the sections", i+1)
			}
			quote = true
		case strings.HasPrefix(l, "## "):
			sections++
			inSection = true
		case strings.HasPrefix(l, "#"):
			t.Errorf("line %d: only H1 and H2 headings belong in llms.txt", i+1)
		case inSection && l != "":
			m := llmsLink.FindStringSubmatch(l)
			if m == nil {
				t.Errorf("line %d: a section holds only '- [name](url): notes' items", i+1)
				continue
			}
			links++
			if !strings.HasPrefix(m[1], s.origin+"/") {
				t.Errorf("line %d: link %s is not on the configured origin", i+1, m[1])
				continue
			}
			s.mustStatus(t, 200, http.MethodGet, strings.TrimPrefix(m[1], s.origin), nil)
		}
	}
	if h1 != 1 || !quote || sections == 0 || links == 0 {
		t.Fatalf("llms.txt: %d H1, blockquote %v, %d sections, %d links", h1, quote, sections, links)
	}
}

// invitation creates an agreement with one agent through the operator API
// and reads its invitation email back from the Maildir, as the agent would.
func (s *testServer) invitation(t *testing.T) envelope.Envelope {
	t.Helper()
	create := fmt.Sprintf(`{"title":"Probe limits","objective":"Check the published limits.","rules":[],"deadline":%q,
		"participants":[{"displayName":"Prober","kind":"agent","email":"prober@agentmail.to","required":true}]}`,
		time.Now().Add(48*time.Hour).UTC().Format(time.RFC3339))
	s.mustStatus(t, http.StatusCreated, http.MethodPost, "/api/v1/admin/agreements", []byte(create), "Authorization", "Bearer "+s.srv.OperatorToken)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.srv.WaitForMail(ctx, 1); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(s.srv.Maildir, "new", "*"))
	if err != nil || len(files) != 1 {
		t.Fatalf("Maildir holds %d new messages (%v), want the one invitation", len(files), err)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var body io.Reader = msg.Body
	if strings.EqualFold(msg.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		body = quotedprintable.NewReader(msg.Body)
	}
	text, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	block, err := envelope.ExtractBlock(text)
	if err != nil {
		t.Fatal(err)
	}
	var env envelope.Envelope
	if err := json.Unmarshal(block, &env); err != nil {
		t.Fatal(err)
	}
	return env
}

// padJSON pads a JSON object with trailing spaces to exactly n bytes.
func padJSON(t *testing.T, obj string, n int) []byte {
	t.Helper()
	if len(obj) > n {
		t.Fatalf("object of %d bytes does not fit in %d", len(obj), n)
	}
	return []byte(obj + strings.Repeat(" ", n-len(obj)))
}

// TestCapabilitiesMatchEnforcedLimits reads the limits from the capabilities
// document and probes each one on the real routes.
func TestCapabilitiesMatchEnforcedLimits(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertest.Options{RateLimit: 120})
	var caps httpapi.Capabilities
	if err := json.Unmarshal(s.mustStatus(t, 200, http.MethodGet, "/.well-known/consensus-agent", nil), &caps); err != nil {
		t.Fatal(err)
	}
	lim := caps.Limits
	if caps.Protocol.Version != "1" || len(caps.NotOffered) == 0 || lim.RateLimitPerMinute != 120 {
		t.Fatalf("capabilities: %+v", caps)
	}

	env := s.invitation(t)
	base := "/api/v1/agent/invitations/" + env.InvitationID
	sec := env.InviteURI[strings.Index(env.InviteURI, "#secret=")+len("#secret="):]
	skip := []string{contract.SkipRequestHeader, "1"}

	// Exchange: limit bytes pass, one more is 413.
	exchange := fmt.Sprintf(`{"secret":%q}`, sec)
	s.mustStatus(t, 413, http.MethodPost, base+"/exchange", padJSON(t, exchange, lim.ExchangeBodyBytes+1))
	var ex venue.Exchanged
	start := time.Now()
	if err := json.Unmarshal(s.mustStatus(t, 200, http.MethodPost, base+"/exchange", padJSON(t, exchange, lim.ExchangeBodyBytes)), &ex); err != nil {
		t.Fatal(err)
	}
	expires, err := time.Parse(time.RFC3339Nano, ex.SessionExpiresAt)
	if err != nil {
		t.Fatal(err)
	}
	lifetime := time.Duration(lim.SessionLifetimeSeconds) * time.Second
	if expires.After(time.Now().Add(lifetime)) || expires.Before(start.Add(lifetime-time.Minute)) {
		t.Errorf("session expires at %s, want about %s from now", ex.SessionExpiresAt, lifetime)
	}

	// Claim.
	session := []string{"Authorization", "Consensus-Session " + ex.SessionToken}
	claim := fmt.Sprintf(`{"emailProof":%q,"inbox":%q}`, env.AgentClaim.EmailProof, env.Inbox)
	s.mustStatus(t, 413, http.MethodPost, base+"/claim", padJSON(t, claim, lim.ClaimBodyBytes+1), session...)
	var cl venue.Claimed
	if err := json.Unmarshal(s.mustStatus(t, 200, http.MethodPost, base+"/claim", padJSON(t, claim, lim.ClaimBodyBytes), session...), &cl); err != nil {
		t.Fatal(err)
	}

	// Events: body bytes, body characters, then events per participant.
	participant := []string{"Authorization", "Consensus-Participant " + cl.ParticipantToken}
	n := 0
	post := func(want int, body []byte, extra ...string) {
		t.Helper()
		n++
		h := append(append([]string{"Idempotency-Key", fmt.Sprintf("probe-%05d", n)}, participant...), extra...)
		s.mustStatus(t, want, http.MethodPost, base+"/events", body, h...)
	}
	comment := func(text string) string {
		return fmt.Sprintf(`{"action":"comment","body":%q,"revision":1,"digest":%q}`, text, env.Revision.Digest)
	}
	post(413, padJSON(t, comment("x"), lim.EventsBodyBytes+1))
	post(201, padJSON(t, comment("x"), lim.EventsBodyBytes))
	post(201, []byte(comment(strings.Repeat("😀", lim.EventBodyCharacters))))
	post(400, []byte(comment(strings.Repeat("😀", lim.EventBodyCharacters+1))), skip...)
	for stored := 2; stored < lim.EventsPerParticipantPerRevision; stored++ {
		post(201, []byte(comment(fmt.Sprintf("note %d", stored))))
	}
	post(409, []byte(comment("one too many")))
}

// TestRateLimitMatchesCapabilities probes the published rate limit.
func TestRateLimitMatchesCapabilities(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertest.Options{RateLimit: 3})
	var caps httpapi.Capabilities
	if err := json.Unmarshal(s.mustStatus(t, 200, http.MethodGet, "/.well-known/consensus-agent", nil), &caps); err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/agent/invitations/7d3c5a8e-4b1f-4c2d-9e6a-0f1b2c3d4e5f/exchange"
	body := []byte(`{"secret":"csi_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`)
	for i := 0; i < caps.Limits.RateLimitPerMinute; i++ {
		s.mustStatus(t, 404, http.MethodPost, path, body)
	}
	resp, _ := s.do(t, http.MethodPost, path, body)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("request %d: status %d, want 429 with Retry-After", caps.Limits.RateLimitPerMinute+1, resp.StatusCode)
	}
}
