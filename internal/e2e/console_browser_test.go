package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/cli/consensusd"
	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/ingest"
	"github.com/consensus-md/consensus/internal/servertest"
)

var enrollLinkRE = regexp.MustCompile(`(?m)^(https?://\S+/console/enroll#coe_[A-Za-z0-9_-]+)\s*$`)

// TestConsoleInBrowser runs tools/browser/console.mjs against the service
// started as make run starts it (CONSENSUS_ENV=local without a public
// origin: http://localhost on its port, where passkeys work): an owner
// enrolls with a virtual WebAuthn authenticator from the link
// `consensusd workspace create --print-link` prints, signs in, creates an agreement through the form (the page
// recomputes the dry run's digest), watches an agent's decision reach the
// agreement list through the request the list holds open (no reload, no
// poll) and its comment reach the conversation beside the terms, amends,
// resends and revokes through confirmations, downloads the signed record
// and CONSENSUS.md once the agent's agreement settles it and checks the
// hashes the page shows and, here, that the participant's API states the
// same, makes and revokes a key, invites a
// viewer who enrolls from the emailed link and is signed out as soon as
// they are removed, filters and pages the audit log, and enrolls again
// from the link `consensusd operator link` prints, all by keyboard alone.
// Screenshots of each step, desktop (1280 px) and phone (390 px), go to
// the test's artifact directory, each page checked with axe-core.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	browserPath := chromium(t)
	node, tools := browserTools(t)

	s := startServer(t, servertest.Options{Localhost: true})
	origin := s.Origin
	listen := strings.TrimPrefix(s.URL, "http://")
	// make run's environment, as `consensusd` reads it in a second terminal
	// beside it: the link's origin is the local default, not given.
	cli := func(args ...string) string {
		env := map[string]string{"CONSENSUS_ENV": "local", "DATABASE_URL": s.DatabaseURL, "CONSENSUS_LISTEN": listen}
		var out, errb strings.Builder
		if code := consensusd.Main(context.Background(), args, consensusd.Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}); code != 0 {
			t.Fatalf("consensusd %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
		}
		m := regexp.MustCompile(`(?m)^enroll\s+(\S+)$`).FindStringSubmatch(out.String())
		if m == nil || !strings.HasPrefix(m[1], origin+"/console/enroll#coe_") {
			t.Fatalf("consensusd %s printed no link on %s:\n%s", strings.Join(args, " "), origin, out.String())
		}
		return m[1]
	}
	enrollLink := cli("workspace", "create", "--name", "acme", "--owner-email", "olga@acme.example", "--print-link")
	var relink string

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
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
	send(map[string]any{"origin": origin, "chromium": browserPath, "outDir": t.ArtifactDir(), "enrollLink": enrollLink})
	var result struct {
		Requested      []string `json:"requested"`
		SessionTokens  []string `json:"sessionTokens"`
		KeyToken       string   `json:"keyToken"`
		RemovalSeconds float64  `json:"removalSeconds"`
		Failures       []string `json:"failures"`
		AgreementID    string   `json:"agreementId"`
		Consensus      string   `json:"consensusSHA256"`
		Record         string   `json:"recordSHA256"`
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
			// On the amended terms: Ada, then the agent, agree, which settles
			// it (Cleo, revoked, is optional). Ada's invitation was resent:
			// the newest email's secret works.
			var d struct{ RevisionDigest, AdaInvitationID string }
			_ = json.Unmarshal(msg.Data, &d)
			ada := &agent{s: s}
			for _, inv := range s.invitationsOf(d.AdaInvitationID) {
				if ada.inv = inv; ada.exchange().StatusCode == 200 {
					break
				}
			}
			ada.join()
			expect(t, s.do("POST", s.agentPath(ada.inv.InvitationID, "events"), map[string]string{"Authorization": "Consensus-Participant " + ada.token, "Idempotency-Key": "ada-agrees-1"},
				map[string]any{"action": "agree", "body": "", "revision": 2, "digest": d.RevisionDigest}), 201, "")
			expect(t, s.do("POST", s.agentPath(bot.inv.InvitationID, "events"), map[string]string{"Authorization": "Consensus-Participant " + bot.token, "Idempotency-Key": "checklist-bot-2"},
				map[string]any{"action": "agree", "body": "", "revision": 2, "digest": d.RevisionDigest}), 201, "")
			send(map[string]string{"done": msg.Need})
		case "operator-link":
			relink = cli("operator", "link", "--workspace", "acme", "--email", "olga@acme.example")
			send(map[string]string{"done": msg.Need, "link": relink})
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
	// The bytes the console offered are the participant's: the same
	// SHA-256 as the participant's API states and serves.
	room := bot.room().json(t)
	art, _ := room["artifact"].(map[string]any)
	if art == nil || art["sha256"] != result.Consensus || result.Consensus == "" {
		t.Errorf("CONSENSUS.md: the console's SHA-256 %q, the participant's room %v", result.Consensus, art)
	}
	if a := bot.artifact("GET"); a.StatusCode != 200 || fmt.Sprintf("%x", sha256.Sum256(a.body)) != result.Consensus {
		t.Errorf("CONSENSUS.md: the participant's download differs from the console's (%d)", a.StatusCode)
	}
	rec := s.do("GET", s.agentPath(bot.inv.InvitationID, "record"), bot.auth(), nil)
	if rec.StatusCode != 200 || fmt.Sprintf("%x", sha256.Sum256(rec.body)) != result.Record || rec.Header.Get("ETag") != `"sha256-`+result.Record+`"` {
		t.Errorf("the record: the participant's API (%d, %s) differs from the console's %s", rec.StatusCode, rec.Header.Get("ETag"), result.Record)
	}
	private := append([]string{result.KeyToken, enrollLink[strings.Index(enrollLink, "#")+1:]}, result.SessionTokens...)
	if relink != "" {
		private = append(private, relink[strings.Index(relink, "#")+1:])
	}
	if viewerLink != "" {
		private = append(private, viewerLink[strings.Index(viewerLink, "#")+1:])
	}
	urls := result.Requested
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

// invitationsOf parses every invitation email of invitationID in the
// Maildir (the first and a resend's), leaving out other mail that names it
// (a new revision's notice).
func (s *server) invitationsOf(invitationID string) []*envelope.Invitation {
	var out []*envelope.Invitation
	files, _ := filepath.Glob(filepath.Join(s.Maildir, "new", "*"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(raw), invitationID) {
			continue
		}
		if inv, err := ingest.ParseMessageBytes(raw, envelope.Policy{Origin: s.Origin, AllowHTTPLoopback: true}); err == nil && inv.InvitationID == invitationID {
			out = append(out, inv)
		}
	}
	if len(out) == 0 {
		s.t.Fatalf("no invitation email for %s", invitationID)
	}
	return out
}
