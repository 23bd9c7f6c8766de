package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-message"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/contract"
	"github.com/consensus-md/consensus/internal/servertest"
)

// chromium finds the browser make test installs (Debian's chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found: make test installs Debian's chromium package when run as root; otherwise install it (apt-get install chromium)")
	return ""
}

// browserTools is tools/browser with its pinned packages installed.
func browserTools(t *testing.T) (node, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("the browser test needs Node.js 20+ (apt-get install nodejs npm)")
	}
	dir, err = filepath.Abs(filepath.Join("..", "..", "tools", "browser"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core")); err != nil {
		t.Fatal("tools/browser is not installed: run make test, or npm ci --prefix tools/browser")
	}
	return node, dir
}

// personLink is what a person reads in their invitation email.
type personLink struct {
	ID     string `json:"id"`
	Link   string `json:"link"`
	Proof  string `json:"proof"`
	Secret string `json:"secret"`
}

var (
	linkRE  = regexp.MustCompile(`(?m)^(https?://\S+/invite/[0-9a-f-]{36}#secret=\S+)$`)
	proofRE = regexp.MustCompile(`(?m)^Your proof code: (\S+)$`)
)

// personFromEmail reads the invitation email as a person does: the link
// and the proof code in the text above the block, decoded as a mail client
// decodes it. The agent's parse of the same email must agree.
func (s *server) personFromEmail(invitationID string) personLink {
	s.t.Helper()
	inv := s.invitation(invitationID) // waits for it and checks it as an agent would
	files, _ := filepath.Glob(filepath.Join(s.Maildir, "new", "*"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(raw, []byte(invitationID)) {
			continue
		}
		m, err := message.Read(bytes.NewReader(raw))
		if err != nil {
			s.t.Fatal(err)
		}
		body, err := io.ReadAll(m.Body)
		if err != nil {
			s.t.Fatal(err)
		}
		text, _, _ := strings.Cut(string(body), "---BEGIN")
		link, proof := linkRE.FindStringSubmatch(text), proofRE.FindStringSubmatch(text)
		if link == nil || proof == nil {
			s.t.Fatalf("the email does not show a person the link and the proof code:\n%s", text)
		}
		if link[1] != inv.Envelope.InviteURI || proof[1] != inv.EmailProof {
			s.t.Fatalf("the text and the envelope disagree: %s %s", link[1], proof[1])
		}
		return personLink{ID: invitationID, Link: link[1], Proof: proof[1], Secret: inv.Secret}
	}
	s.t.Fatalf("no email for %s", invitationID)
	return personLink{}
}

// TestPeopleInBrowser runs tools/browser/human.mjs: people take part
// through the pages in Debian's chromium, driven by playwright-core, beside
// an agent on the agent API. The browser reaches the service through a
// proxy that checks every request and answer against openapi.json and
// records every URL. Screenshots of each step, desktop and phone, are
// written to the test's artifact directory (go test -artifacts keeps them).
func TestPeopleInBrowser(t *testing.T) {
	t.Parallel()
	browserPath := chromium(t)
	node, tools := browserTools(t)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	origin := "http://" + ln.Addr().String()
	s := startServer(t, servertest.Options{Origin: origin})
	var mu sync.Mutex
	var seen []string
	proxyTo(t, ln, s, origin, func(u string) { mu.Lock(); seen = append(seen, u); mu.Unlock() })

	main := s.create("Adopt the shared glossary", s.future(), participantSpec{"Ada", "human", true},
		participantSpec{"Grace", "human", true}, participantSpec{"Glossary-Bot", "agent", true})
	revoked := s.create("Revocation drill", s.future(), participantSpec{"Rita", "human", true}, participantSpec{"Drill-Bot", "agent", true})
	expiring := s.create("Expiry drill", s.Clock.Now().Add(time.Hour).Truncate(time.Second), participantSpec{"Ed", "human", true})
	quorumRoom := s.createHumanQuorum("Pick the release name")
	people := map[string]personLink{
		"five": s.personFromEmail(quorumRoom.Participants[0].InvitationID),
		"one":  s.personFromEmail(main.Participants[0].InvitationID), "two": s.personFromEmail(main.Participants[1].InvitationID),
		"three": s.personFromEmail(revoked.Participants[0].InvitationID), "four": s.personFromEmail(expiring.Participants[0].InvitationID),
	}
	bot := s.agent(main.Participants[2].InvitationID)

	cfg := map[string]any{"origin": origin, "chromium": browserPath, "outDir": t.ArtifactDir(), "digest": main.RevisionDigest}
	for k, v := range people {
		cfg[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(tools, "human.mjs"))
	cmd.Dir = tools
	cmd.Stderr = testWriter{t}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	send := func(v any) {
		b, _ := json.Marshal(v)
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			t.Errorf("write to the browser script: %v", err)
		}
	}
	send(cfg)
	var result struct {
		Requested      []string `json:"requested"`
		Tokens         []string `json:"tokens"`
		ArtifactSHA256 string   `json:"artifactSHA256"`
		Failures       []string `json:"failures"`
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "@@ ")
		if !ok {
			t.Log(sc.Text())
			continue
		}
		var msg struct {
			Need   string          `json:"need"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			t.Fatalf("browser script: %v: %s", err, line)
		}
		switch msg.Need {
		case "agent-decides":
			bot.join()
			expect(t, bot.post("glossary-bot-1", "agree", ""), 201, "")
		case "quorum-agent-agrees":
			qbot := s.agent(quorumRoom.Participants[1].InvitationID).join()
			expect(t, qbot.post("quorum-bot-1", "agree", ""), 201, "")
		case "revoke":
			expect(t, s.do("POST", "/api/v1/admin/participants/"+revoked.Participants[0].ParticipantID+"/revoke", operator(), nil), 200, "")
		case "expire":
			s.Clock.Advance(time.Hour)
		case "":
			if err := json.Unmarshal(msg.Result, &result); err != nil {
				t.Fatal(err)
			}
			continue
		default:
			t.Fatalf("browser script asks for %q", msg.Need)
		}
		send(map[string]string{"done": msg.Need})
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("browser script: %v; failed checks: %v", err, result.Failures)
	}
	if result.Requested == nil || len(result.Tokens) != 1 || !strings.HasPrefix(result.Tokens[0], "csp_") {
		t.Fatalf("the browser script reported no result: %+v", result)
	}

	// The service's own record of the artifact equals what the page saved.
	r := bot.room()
	expect(t, r, 200, "")
	if art, _ := r.json(t)["artifact"].(map[string]any); art == nil || art["sha256"] != result.ArtifactSHA256 {
		t.Errorf("downloaded SHA-256 %s, the room says %v", result.ArtifactSHA256, art)
	}
	// No credential in the log or in any URL the browser asked for, as the
	// browser saw them or as they reached the service.
	private := result.Tokens
	for _, p := range people {
		private = append(private, p.Secret, strings.TrimPrefix(p.Secret, "csi_"), p.Proof)
	}
	mu.Lock()
	urls := append(append([]string(nil), result.Requested...), seen...)
	mu.Unlock()
	logs := s.Logs.String()
	for _, secret := range private {
		if strings.Contains(logs, secret) {
			t.Errorf("the server log holds a credential (%.8s…)", secret)
		}
		for _, u := range urls {
			if strings.Contains(u, secret) || strings.Contains(u, url.QueryEscape(secret)) {
				t.Errorf("a request URL holds a credential (%.8s…): %.60s…", secret, u)
			}
		}
	}
	if len(seen) < 20 {
		t.Errorf("the proxy saw only %d requests", len(seen))
	}
	t.Logf("screenshots: %s", t.ArtifactDir())
}

// proxyTo serves on ln a reverse proxy to s whose transport validates
// every request and answer against openapi.json, and reports each request
// URL to record.
func proxyTo(t *testing.T, ln net.Listener, s *server, origin string, record func(string)) {
	v, err := contract.Load(consensus.OpenAPI, origin)
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(s.URL)
	rp := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: v.Transport(t, &http.Transport{}),
		// A poll the browser abandons (a navigation, a closed tab) is no error.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(r.RequestURI)
		rp.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// testWriter sends a process's output to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
