package e2e

import (
	"bufio"
	"context"
	"encoding/json"
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

	"github.com/consensus-md/consensus/internal/servertest"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/venue"
)

var enrollLinkRE = regexp.MustCompile(`(?m)^(https?://\S+/console/enroll#coe_[A-Za-z0-9_-]+)\s*$`)

// TestConsoleInBrowser runs tools/browser/console.mjs: an owner enrolls
// with a virtual WebAuthn authenticator from the link workspace creation
// prints, signs in, creates an agreement through the form (the page
// recomputes the dry run's digest), watches an agent's decision reach the
// agreement list through the request the list holds open (no reload, no
// poll), amends, resends and revokes through confirmations, downloads the
// signed record and CONSENSUS.md once an agent's disagreement settles it
// and checks the hashes the page shows, makes and revokes a key, invites a
// viewer who enrolls from the emailed link and is signed out as soon as
// they are removed, and filters and pages the audit log, all by keyboard
// alone. The origin is localhost:
// WebAuthn takes no IP address as a relying party id. Screenshots of each
// step, desktop and phone, go to the test's artifact directory.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	browserPath := chromium(t)
	node, tools := browserTools(t)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	origin := "http://localhost:" + strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:")
	s := startServer(t, servertest.Options{Origin: origin})
	var mu sync.Mutex
	var seen []string
	target, _ := url.Parse(s.URL)
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target); pr.Out.Host = pr.In.Host },
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.RequestURI)
		mu.Unlock()
		rp.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	// What `consensusd workspace create --print-link` does.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := store.Open(ctx, s.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ws, err := (&venue.Venue{Store: st, Now: time.Now, Origin: origin}).CreateWorkspace(ctx, venue.NewWorkspace{Name: "acme", OwnerEmail: "olga@acme.example", Link: venue.LinkPrint})
	if err != nil {
		t.Fatal(err)
	}

	cmd := exec.CommandContext(ctx, node, filepath.Join(tools, "console.mjs"))
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
	send(map[string]any{"origin": origin, "chromium": browserPath, "outDir": t.ArtifactDir(), "enrollLink": ws.EnrollmentLink})
	var result struct {
		Requested      []string `json:"requested"`
		SessionTokens  []string `json:"sessionTokens"`
		KeyToken       string   `json:"keyToken"`
		RemovalSeconds float64  `json:"removalSeconds"`
		Failures       []string `json:"failures"`
	}
	var viewerLink string
	var bot *agent
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
			Data   json.RawMessage `json:"data"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			t.Fatalf("browser script: %v: %s", err, line)
		}
		switch msg.Need {
		case "agent-joins":
			var d struct{ InvitationID string }
			_ = json.Unmarshal(msg.Data, &d)
			bot = s.agent(d.InvitationID).join()
			send(map[string]string{"done": msg.Need})
		case "agent-decides":
			expect(t, bot.post("checklist-bot-1", "agree", ""), 201, "")
			send(map[string]string{"done": msg.Need})
		case "agent-comments":
			rev := bot.room().json(t)["revision"].(map[string]any)
			expect(t, s.do("POST", s.agentPath(bot.inv.InvitationID, "events"), map[string]string{"Authorization": "Consensus-Participant " + bot.token, "Idempotency-Key": "checklist-bot-comment"},
				map[string]any{"action": "comment", "body": "Reading revision 2.", "revision": rev["number"], "digest": rev["revisionDigest"]}), 201, "")
			send(map[string]string{"done": msg.Need})
		case "agent-decides-again":
			// On the amended terms: the first disagreement settles it.
			var d struct{ RevisionDigest string }
			_ = json.Unmarshal(msg.Data, &d)
			expect(t, s.do("POST", s.agentPath(bot.inv.InvitationID, "events"), map[string]string{"Authorization": "Consensus-Participant " + bot.token, "Idempotency-Key": "checklist-bot-2"},
				map[string]any{"action": "disagree", "body": "", "revision": 2, "digest": d.RevisionDigest}), 201, "")
			send(map[string]string{"done": msg.Need})
		case "viewer-link":
			viewerLink = s.enrollmentLinkFor(t, "vera@acme.example")
			send(map[string]string{"done": msg.Need, "link": viewerLink})
		case "":
			if err := json.Unmarshal(msg.Result, &result); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("browser script asks for %q", msg.Need)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("browser script: %v; failed checks: %v", err, result.Failures)
	}
	if len(result.SessionTokens) != 1 || result.KeyToken == "" {
		t.Fatalf("the browser script reported no result: %+v", result)
	}
	t.Logf("removal to refusal in the viewer's open console: %.2f s", result.RemovalSeconds)
	private := append([]string{result.KeyToken, ws.EnrollmentLink[strings.Index(ws.EnrollmentLink, "#")+1:]}, result.SessionTokens...)
	if viewerLink != "" {
		private = append(private, viewerLink[strings.Index(viewerLink, "#")+1:])
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
			if strings.Contains(u, secret) {
				t.Errorf("a request URL holds a credential (%.8s…): %.60s…", secret, u)
			}
		}
	}
	t.Logf("screenshots: %s", t.ArtifactDir())
}

// enrollmentLinkFor waits for the enrollment email to address and returns
// its link, as a person reads it.
func (s *server) enrollmentLinkFor(t *testing.T, address string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(s.Maildir, "new", "*"))
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil || !strings.Contains(string(raw), "To: "+address) && !strings.Contains(string(raw), "<"+address+">") {
				continue
			}
			if m := enrollLinkRE.FindStringSubmatch(strings.ReplaceAll(string(raw), "\r\n", "\n")); m != nil {
				return m[1]
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no enrollment email to %s", address)
	return ""
}
