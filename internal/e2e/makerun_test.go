package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
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

// TestMakeRunWithOpsPortsTaken runs deploy/local/run.sh (what `make run`
// starts) in a scratch checkout while other programs hold Prometheus's
// 9090 and the operations listener's default port: the service still
// starts, its operations listener answers on the port the log names, and
// `consensusd healthcheck` passes there but fails against the program
// holding the default port.
func TestMakeRunWithOpsPortsTaken(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs consensusd")
	}
	// Whatever already holds a port keeps it taken: that is the premise.
	other := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "Prometheus Server is Healthy.\n")
	}), ReadHeaderTimeout: time.Second}
	for _, addr := range []string{"127.0.0.1:9090", "127.0.0.1:8079"} {
		if ln, err := net.Listen("tcp", addr); err == nil {
			go func() { _ = other.Serve(ln) }()
		}
	}
	t.Cleanup(func() { _ = other.Close() })
	for _, addr := range []string{"127.0.0.1:9090", "127.0.0.1:8079"} {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			t.Fatalf("%s is not taken: %v", addr, err)
		}
		c.Close()
	}

	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "bin")+"/", "./cmd/consensusd")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	abs, _ := filepath.Abs("../../deploy")
	must(t, os.Symlink(abs, filepath.Join(dir, "deploy")))

	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "CONSENSUS_") && k != "DATABASE_URL" {
			env = append(env, kv)
		}
	}
	listen := freeAddr(t)
	env = append(env, "DATABASE_URL="+pgtest.URL(t), "CONSENSUS_LISTEN="+listen,
		"CONSENSUS_PUBLIC_ORIGIN=http://"+listen)

	// `run.sh check` checks make run's own settings, not production's.
	check := exec.Command("bash", filepath.Join(dir, "deploy/local/run.sh"), "check")
	check.Dir, check.Env = dir, env
	if out, err := check.CombinedOutput(); err != nil || !strings.Contains(string(out), "configuration ok") ||
		!regexp.MustCompile(`CONSENSUS_ENV +local`).Match(out) {
		t.Fatalf("run.sh check: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(dir, "deploy/local/run.sh"))
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
	})
	bannerc := make(chan string, 1)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() && !strings.HasPrefix(sc.Text(), "  database") {
			b.WriteString(sc.Text() + "\n")
		}
		bannerc <- b.String()
		_, _ = io.Copy(io.Discard, stdout)
	}()
	banner := <-bannerc
	if !strings.Contains(banner, "127.0.0.1:8079 is taken") {
		t.Errorf("the banner does not say the operations port moved:\n%s", banner)
	}

	ops := ""
	sc := bufio.NewScanner(stderr)
	var lines []string
	for ops == "" && sc.Scan() {
		lines = append(lines, sc.Text())
		var l struct {
			Msg string `json:"msg"`
			Ops string `json:"ops"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "consensusd serving" {
			ops = l.Ops
		}
	}
	if ops == "" {
		t.Fatalf("consensusd did not start:\n%s\n%s", banner, strings.Join(lines, "\n"))
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()

	healthcheck := func(addr string) (int, string) {
		hc := exec.Command(filepath.Join(dir, "bin/consensusd"), "healthcheck")
		hc.Env = append(env, "CONSENSUS_OPS_LISTEN="+addr)
		out, err := hc.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		must(t, err)
		return 0, string(out)
	}
	if code, out := healthcheck(ops); code != 0 {
		t.Errorf("healthcheck on %s: exit %d %s", ops, code, out)
	}
	for _, addr := range []string{"127.0.0.1:9090", "127.0.0.1:8079"} {
		if code, out := healthcheck(addr); code != 1 || !strings.Contains(out, "not consensusd") {
			t.Errorf("healthcheck against the other program on %s: exit %d %s", addr, code, out)
		}
	}
}
