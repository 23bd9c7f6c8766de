package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// run executes the command line with only the given environment and
// standard input, and returns the exit status, stdout and stderr.
func run(t *testing.T, env map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(stdin), Getenv: func(k string) string { return env[k] }})
	return code, out.String(), errb.String()
}

// operatorAPI serves canned answers for the operator routes and records
// what it received. Not servertest: these tests pin how the CLI renders fixed
// answers, among them states a real server reaches only after mail failures
// (a retrying delivery with its last reply) and a problem with a request id.
type operatorAPI struct {
	srv      *httptest.Server
	bodies   chan string
	problem  bool
	authSeen chan string
}

const listPage = `{"agreements":[{"agreementId":"0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b","title":"Ship release 2.4","revisionNumber":1,"deadline":"2030-01-01T00:00:00Z","createdAt":"2026-01-01T00:00:00.000000Z","outcome":{"status":"pending","decidedAt":null,"decidingEventId":null}}],"nextCursor":"next-page"}`

const detail = `{"agreementId":"0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b","title":"Ship release 2.4","revisionNumber":1,"deadline":"2030-01-01T00:00:00Z","createdAt":"2026-01-01T00:00:00.000000Z","outcome":{"status":"reached","decidedAt":"2026-01-02T00:00:00.000000Z","decidingEventId":"0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5c"},"revisionDigest":"` + hex64 + `","markdownDigest":"` + hex64 + `","chainHead":"` + hex64 + `","eventCount":2,"participants":[{"participantId":"0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5d","invitationId":"0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5e","displayName":"Release agent","kind":"agent","email":"release@agents.test","required":true,"state":"decided","decision":"agree","revoked":false,"deliveries":[{"state":"retrying","attempts":2,"lastReply":"451 try later","messageId":"<m@x>","queuedAt":"2026-01-01T00:00:00.000000Z","nextAttemptAt":null,"sentAt":null,"history":[]}]}]}`

const hex64 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func startOperatorAPI(t *testing.T) *operatorAPI {
	t.Helper()
	api := &operatorAPI{bodies: make(chan string, 10), authSeen: make(chan string, 10)}
	api.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.authSeen <- r.Header.Get("Authorization")
		b, _ := io.ReadAll(r.Body)
		api.bodies <- string(b)
		if api.problem {
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("X-Request-Id", "req-123")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"type":"https://consensus.example/problems/invalid-request","title":"Invalid request","status":400,"detail":"participants[0].email: must be an email address","code":"invalid-request","field":"participants[0].email"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "GET" && r.URL.Path == "/api/v1/admin/agreements":
			_, _ = io.WriteString(w, listPage)
		case r.Method == "GET":
			_, _ = io.WriteString(w, detail)
		default:
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"agreementId":"0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b","revisionNumber":1,"revisionDigest":"`+hex64+`","markdownDigest":"`+hex64+`","deadline":"2030-01-01T00:00:00Z","participants":[]}`)
		}
	}))
	t.Cleanup(api.srv.Close)
	return api
}

func (api *operatorAPI) env() map[string]string {
	return map[string]string{"CONSENSUS_URL": api.srv.URL, "CONSENSUS_OPERATOR_TOKEN": "cso_test-operator-token-0123456789"}
}

// TestUnreachableServer: a refused connection is one line naming the URL,
// exit 1, never Go's error chain.
func TestUnreachableServer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := map[string]string{"CONSENSUS_URL": "http://" + addr, "CONSENSUS_OPERATOR_TOKEN": "cso_test-operator-token-0123456789"}
	for _, args := range [][]string{{"admin", "list"}, {"admin", "get", "x"}, {"admin", "--url", "http://" + addr + "/", "revoke", "x"}} {
		code, stdout, stderr := run(t, env, "", args...)
		want := "consensus: cannot reach http://" + addr + ": connection refused\n"
		if code != 1 || stderr != want || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 1 and %q", args, code, stderr, stdout, want)
		}
	}
}

// TestProblemRendering: a problem answer is shown as its title, detail
// and field, on stderr, not as raw JSON.
func TestProblemRendering(t *testing.T) {
	t.Parallel()
	api := startOperatorAPI(t)
	api.problem = true
	code, stdout, stderr := run(t, api.env(), `{"title":"x"}`, "admin", "create", "-f", "-")
	if code != 1 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	want := "consensus: POST /api/v1/admin/agreements: Invalid request (HTTP 400, invalid-request)\n" +
		"  participants[0].email: must be an email address\n" +
		"  field: participants[0].email\n" +
		"  request id: req-123\n"
	if stderr != want {
		t.Fatalf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
	if got := <-api.bodies; got != `{"title":"x"}` {
		t.Fatalf("create -f - sent %q, not standard input", got)
	}
}

// TestOutputFormats: JSON with --output json (and off a terminal), a table
// with --output table; data on stdout, the next-page hint on stderr.
func TestOutputFormats(t *testing.T) {
	t.Parallel()
	api := startOperatorAPI(t)
	for _, args := range [][]string{{"admin", "list", "--output", "json"}, {"admin", "list"}, {"admin", "get", "id", "-o", "json"}, {"admin", "create", "-f", "-", "-o", "json"}} {
		code, stdout, stderr := run(t, api.env(), "{}", args...)
		var v map[string]any
		if err := json.Unmarshal([]byte(stdout), &v); code != 0 || err != nil || len(v) == 0 {
			t.Errorf("%v: exit %d, %v, stdout %q, stderr %q", args, code, err, stdout, stderr)
		}
	}
	code, stdout, stderr := run(t, api.env(), "", "admin", "list", "--output", "table")
	if code != 0 || !strings.HasPrefix(stdout, "AGREEMENT ") || !strings.Contains(stdout, "pending") || !strings.Contains(stdout, "Ship release 2.4") ||
		stderr != "more: consensus admin list --cursor next-page\n" {
		t.Errorf("list table: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, _ = run(t, api.env(), "", "admin", "get", "id", "-o", "table")
	for _, want := range []string{"reached at 2026-01-02", "Release agent", "agree", "retrying after 2 attempt(s): 451 try later"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("get table lacks %q: exit %d\n%s", want, code, stdout)
		}
	}
}

// TestOperatorTokenSources: --token-file, then the environment, then
// .data/operator-token; never a flag's value.
func TestOperatorTokenSources(t *testing.T) {
	t.Parallel()
	api := startOperatorAPI(t)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("cso_from-token-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(t, api.env(), "", "admin", "list", "--token-file", file); code != 0 {
		t.Fatalf("--token-file: exit %d %s", code, stderr)
	}
	if got := <-api.authSeen; got != "Bearer cso_from-token-file" {
		t.Fatalf("--token-file sent %q", got)
	}
	env := map[string]string{"CONSENSUS_URL": api.srv.URL, "CONSENSUS_OPERATOR_TOKEN_FILE": file}
	if code, _, stderr := run(t, env, "", "admin", "list"); code != 0 || <-api.authSeen != "Bearer cso_from-token-file" {
		t.Fatalf("CONSENSUS_OPERATOR_TOKEN_FILE: exit %d %s", code, stderr)
	}
	if code, _, stderr := run(t, api.env(), "", "admin", "list", "--token", "x"); code != 2 || !strings.Contains(stderr, "unknown flag --token (did you mean --token-file?)") {
		t.Fatalf("--token must not exist: exit %d %s", code, stderr)
	}
	code, _, stderr := run(t, map[string]string{"CONSENSUS_URL": api.srv.URL}, "", "admin", "list", "--token-file", filepath.Join(t.TempDir(), "missing"))
	if code != 1 || !strings.HasPrefix(stderr, "consensus: --token-file: open ") {
		t.Fatalf("missing token file: exit %d %q", code, stderr)
	}
}

// TestUsageErrors: one line naming the mistake (with a suggestion when one
// is close), then that command's usage only; exit 2; nothing on stdout.
func TestExpiresTakesADateOrAnInstant(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"2027-06-30": "2027-06-30T00:00:00Z", "2027-06-30T18:00:00+02:00": "2027-06-30T16:00:00Z", "2027-06-30T12:00:00.5Z": "2027-06-30T12:00:00Z"} {
		if got, err := expiry(in); err != nil || got != want {
			t.Errorf("--expires %s: %q %v, want %q", in, got, err, want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args       []string
		first, not string
	}{
		{[]string{"admin", "lsit"}, `consensus admin: unknown command "lsit" (did you mean "list"?)`, "verify"},
		{[]string{"admni"}, `consensus: unknown command "admni" (did you mean "admin"?)`, "--limit"},
		{[]string{"admin", "list", "--limt", "3"}, "consensus admin list: unknown flag --limt (did you mean --limit?)", "create"},
		{[]string{"admin", "get"}, "consensus admin get: missing AGREEMENT_ID", "--limit"},
		{[]string{"admin", "list", "--limit", "500"}, "consensus admin list: --limit: must be from 1 to 100, got 500", "create"},
		{[]string{"admin", "create"}, "consensus admin create: missing -f FILE (use - for standard input)", "--limit"},
		{[]string{"agent", "comment", "id"}, "consensus agent comment: missing TEXT", "watch"},
		{[]string{"agent", "artifact", "id"}, "consensus agent artifact: missing --file FILE", "watch"},
		{[]string{"agent", "watch"}, "consensus agent watch: give exactly one of --imap URL and --maildir DIR", "comment"},
		{[]string{"agent", "watch", "--maildir", "m"}, "consensus agent watch: --maildir needs --inbox ADDRESS: a Maildir may hold other participants' invitations, and this watcher claims only its own", "comment"},
		{[]string{"verify", "revision", "a", "b"}, `consensus verify revision: unexpected argument "b"`, "--sha256"},
		{[]string{"admin", "keys", "create", "--name", "ci", "--scope", "agreements:read", "--expires", "2027-06-31"},
			`consensus admin keys create: --expires: must be a date such as 2027-06-30 or an instant such as 2027-06-30T12:00:00Z, got "2027-06-31"`, "expiresAt"},
		{[]string{"admin", "keys", "revoke"}, "consensus admin keys revoke: missing KEY_ID", "--limit"},
		{[]string{"admin", "keys", "delete"}, "consensus admin keys revoke: missing KEY_ID", "--limit"},
		{[]string{"completion", "powershell"}, `consensus completion: unknown shell "powershell": bash, zsh or fish`, "admin"},
	} {
		code, stdout, stderr := run(t, nil, "", tc.args...)
		first, rest, _ := strings.Cut(stderr, "\n")
		if code != 2 || stdout != "" || first != tc.first || !strings.Contains(rest, "Usage:\n  consensus ") || strings.Contains(rest, tc.not) {
			t.Errorf("%v: exit %d, stdout %q, stderr:\n%s\nwant first line %q and no %q", tc.args, code, stdout, stderr, tc.first, tc.not)
		}
	}
}

// TestWatchLocalFlags: --local alone accepts a local server's origin; an
// http origin without --allow-http-loopback names both flags.
func TestWatchLocalFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, sub := range []string{"new", "cur", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, "mail", sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var out, errb strings.Builder
	code := Main([]string{"agent", "watch", "--state", filepath.Join(dir, "state"), "--maildir", filepath.Join(dir, "mail"), "--inbox", "a@agents.test", "--local"},
		Env{Stdout: &out, Stderr: &errb, Context: ctx, Getenv: func(string) string { return "" }})
	if code != 0 {
		t.Fatalf("--local: exit %d: %s", code, errb.String())
	}
	code, _, stderr := run(t, nil, "", "agent", "watch", "--state", filepath.Join(dir, "state"), "--maildir", filepath.Join(dir, "mail"), "--inbox", "a@agents.test", "--origin", "http://127.0.0.1:8080")
	if code != 1 || !strings.Contains(stderr, "--allow-http-loopback") || !strings.Contains(stderr, "--local") {
		t.Fatalf("http origin without --allow-http-loopback: exit %d %q", code, stderr)
	}
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	for shell, want := range map[string]string{"bash": "complete -o default -F __start_consensus consensus", "zsh": "#compdef consensus", "fish": "complete -c consensus"} {
		code, stdout, stderr := run(t, nil, "", "completion", shell)
		if code != 0 || !strings.Contains(stdout, want) || stderr != "" {
			t.Errorf("%s: exit %d, stderr %q, script lacks %q", shell, code, stderr, want)
		}
	}
}

// TestAdminIDHints: revoke and resend answer a generic 404 for an id of
// the wrong kind; the command says which id it takes.
func TestAdminIDHints(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"type":"https://consensus.example/problems/not-found","title":"Not found","status":404,"detail":"Nothing is available at this address.","code":"not-found"}`)
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"CONSENSUS_URL": srv.URL, "CONSENSUS_OPERATOR_TOKEN": "cso_test-operator-token-0123456789"}
	for cmd, want := range map[string]string{
		"revoke": "  hint: revoke takes a PARTICIPANT_ID, not an invitation id",
		"resend": "  hint: resend takes an INVITATION_ID, not a participant id",
	} {
		code, _, stderr := run(t, env, "", "admin", cmd, "0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5e")
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr %q", cmd, code, stderr)
		}
	}
}

// TestAdminListMoreKeepsLimit: the next page's command repeats --limit.
func TestAdminListMoreKeepsLimit(t *testing.T) {
	t.Parallel()
	api := startOperatorAPI(t)
	code, _, stderr := run(t, api.env(), "", "admin", "list", "--limit", "1", "--output", "table")
	if code != 0 || stderr != "more: consensus admin list --limit 1 --cursor next-page\n" {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestArtifactOutputAlias: -o still names the file for agent artifact, as
// a deprecated spelling of --file, and says so.
func TestArtifactOutputAlias(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, _, stderr := run(t, nil, "", "agent", "artifact", "0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b", "-o", filepath.Join(dir, "C.md"), "--state", filepath.Join(dir, "state"))
	if code != 1 || !strings.Contains(stderr, "use --file FILE") || strings.Contains(stderr, "missing --file") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}
