package e2e

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/pgtest"
)

// bashBlocks returns the ```bash blocks of text, joined.
func bashBlocks(text []byte) []byte {
	var out bytes.Buffer
	for _, b := range regexp.MustCompile("(?s)```bash\n(.*?)```").FindAllSubmatch(text, -1) {
		out.Write(b[1])
	}
	return out.Bytes()
}

// freeAddr returns a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestOperationsHTTPSTrial is the "tried as a new user" check: it runs
// the bash blocks of docs/operations.md's one-machine trial unchanged (a
// PostgreSQL, TLS files from deploy/local/tls.sh, two replicas on two
// ports with every setting in the environment), with the README
// walkthrough's blocks where the trial says to run them, in a scratch
// directory laid out like a checkout after `make build`. The agent's
// requests go to one replica and the operator's to the other, all over
// HTTPS; the certificate is rotated with SIGHUP; both replicas stop on
// SIGTERM with status 0.
func TestOperationsHTTPSTrial(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs two consensusd processes")
	}
	for _, tool := range []string{"bash", "jq", "curl", "sed", "grep", "awk", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the trial needs %s", tool)
		}
	}
	ops, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	trial := regexp.MustCompile(`(?s)<!-- https-trial:start -->(.*)<!-- https-trial:walkthrough -->(.*)<!-- https-trial:end -->`).FindSubmatch(ops)
	if trial == nil {
		t.Fatal("docs/operations.md has no https-trial section with its walkthrough marker")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	walkthrough := regexp.MustCompile(`(?s)<!-- walkthrough:start -->(.*)<!-- walkthrough:end -->`).FindSubmatch(readme)
	if walkthrough == nil {
		t.Fatal("README has no walkthrough section")
	}
	// The trial keeps to .data/trial and to ports of its own, so a make run
	// going in another terminal (.data/pg, .data/mail, 8080) is left alone.
	for _, part := range [][]byte{bashBlocks(trial[1]), bashBlocks(trial[2])} {
		for _, shared := range []string{".data/pg", ".data/mail", ".data/secrets", ".data/tls", "8080", "${DATABASE_URL"} {
			if bytes.Contains(part, []byte(shared)) {
				t.Errorf("the trial's commands name %q, which make run uses", shared)
			}
		}
	}
	var script bytes.Buffer
	script.WriteString("set -euo pipefail\n")
	script.Write(bashBlocks(trial[1]))
	script.Write(bashBlocks(walkthrough[1]))
	script.Write(bashBlocks(trial[2]))

	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "bin")+"/", "./cmd/consensus", "./cmd/consensusd")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, name := range []string{"examples", "deploy"} {
		abs, _ := filepath.Abs("../../" + name)
		must(t, os.Symlink(abs, filepath.Join(dir, name)))
	}

	// A clean environment: nothing of the test run's own settings.
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "CONSENSUS_") || k == "DATABASE_URL" || k == "SSL_CERT_FILE" || k == "CURL_CA_BUNDLE" || k == "MAILDIR" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "TRIAL_DATABASE_URL="+pgtest.URL(t),
		"API1="+freeAddr(t), "OPS1="+freeAddr(t), "API2="+freeAddr(t), "OPS2="+freeAddr(t))

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir, cmd.Env = dir, env
	// The replicas run in the script's process group: a failing script
	// must not leave them behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	t.Cleanup(func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	out, err := cmd.CombinedOutput()
	logs := func(n string) string {
		b, _ := os.ReadFile(filepath.Join(dir, ".data", "trial", "replica"+n+".log"))
		return string(b)
	}
	if err != nil {
		t.Fatalf("the trial failed: %v\n%s\n== replica 1\n%s\n== replica 2\n%s", err, out, logs("1"), logs("2"))
	}
	text := string(out)
	t.Logf("the trial's output:\n%s", text)
	for _, want := range []string{
		`{"status":"ready","service":"consensusd","database":"ok","schema":"current","log":{"size":`, "strict-transport-security: max-age=31536000",
		`"status": "reached"`, "Content-Digest ok", "X-Consensus-SHA256 ok", "# CONSENSUS.md: Ship release 2.4 on Friday",
		`consensus_events_total{action="agree"} 1`, `consensus_outcomes_total{status="reached"} 1`,
		`consensus_mail_delivery_attempts_total{result="sent"}`, "both replicas stopped",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the trial's output lacks %q", want)
		}
	}
	if n := strings.Count(text, `{"status":"ready","service":"consensusd","database":"ok","schema":"current","log":{"size":`); n != 2 {
		t.Errorf("%d replicas reported ready, want 2", n)
	}
	serials := regexp.MustCompile(`(?m)^serial=([0-9A-F]+)$`).FindAllStringSubmatch(text, -1)
	if len(serials) != 2 || serials[0][1] == serials[1][1] {
		t.Errorf("serials before and after the SIGHUP: %v, want two different", serials)
	}

	// Both replicas served, both reloaded and stopped cleanly, and none
	// logged a credential.
	token, _ := os.ReadFile(filepath.Join(dir, ".data", "trial", "secrets", "operator-token"))
	claim, _ := os.ReadFile(filepath.Join(dir, ".data", "walkthrough", "claim.json"))
	participant := regexp.MustCompile(`csp_[A-Za-z0-9_-]+`).FindString(string(claim))
	if len(token) < 24 || participant == "" {
		t.Fatalf("operator token %d bytes, participant token %q: the trial did not leave them where expected", len(token), participant)
	}
	for _, n := range []string{"1", "2"} {
		l := logs(n)
		for _, want := range []string{`"msg":"request"`, `"msg":"consensusd serving"`, `"tls":true`, `"msg":"requests in flight finished"`, `"msg":"consensusd stopped"`} {
			if !strings.Contains(l, want) {
				t.Errorf("replica %s's log lacks %s", n, want)
			}
		}
		if strings.Count(l, `"msg":"TLS certificate loaded"`) != 2 {
			t.Errorf("replica %s did not load its certificate twice (start and SIGHUP)", n)
		}
		for _, secret := range []string{string(token), participant} {
			if strings.Contains(l, secret) || strings.Contains(text, secret) {
				t.Errorf("replica %s's log or the trial's output shows a credential", n)
			}
		}
	}
}
