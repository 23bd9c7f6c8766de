package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// HA is a primary with a streaming standby, each a private cluster,
// started with deploy/local/pg.sh ha-start (fsync off): synchronous unless
// asked otherwise, so a commit returns once the standby has it.
type HA struct {
	Primary, Standby *Postgres
	url              string
}

// StartHA starts a primary and its standby; async leaves the standby
// asynchronous (a commit does not wait for it).
func StartHA(tb testing.TB, async bool) *HA {
	tb.Helper()
	h := &HA{Primary: newPostgres(tb), Standby: newPostgres(tb)}
	args := []string{"ha-start", h.Primary.dir, h.Standby.dir, "--fast"}
	if async {
		args = append(args, "--async")
	}
	out, err := h.Primary.run(args...)
	if err != nil {
		tb.Fatalf("proctest: %v", err)
	}
	h.url = out
	for _, p := range []*Postgres{h.Primary, h.Standby} {
		if p.url, err = p.run("url", p.dir); err != nil {
			tb.Fatalf("proctest: %v", err)
		}
		p.locate(tb)
	}
	return h
}

// URL is the service's two-host URL (target_session_attrs=read-write):
// the primary's socket first, then the standby's.
func (h *HA) URL() string { return h.url }

// Promote promotes the standby and returns how long pg.sh promote took.
func (h *HA) Promote(tb testing.TB) time.Duration {
	tb.Helper()
	start := time.Now()
	if _, err := h.Standby.run("promote", h.Standby.dir); err != nil {
		tb.Fatalf("proctest: %v", err)
	}
	return time.Since(start)
}

// run runs deploy/local/pg.sh with args and returns what it printed.
func (p *Postgres) run(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(p.root, "deploy/local/pg.sh"), args...)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return "", &pgshError{args: args, err: err, stderr: errb.String()}
	}
	return strings.TrimSpace(string(out)), nil
}

type pgshError struct {
	args   []string
	err    error
	stderr string
}

func (e *pgshError) Error() string {
	return "pg.sh " + strings.Join(e.args, " ") + ": " + e.err.Error() + ": " + e.stderr
}

// Kill sends SIGKILL to the postmaster and every one of its children at
// once, as a machine that dies would: no backend says goodbye, no WAL is
// flushed, the standby's stream breaks. The socket file stays behind, and
// connecting to it is refused.
func (p *Postgres) Kill(tb testing.TB) {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(p.dataDir, "postmaster.pid"))
	if err != nil {
		tb.Fatalf("proctest: kill: %v", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pm, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		tb.Fatalf("proctest: kill: postmaster.pid: %v", err)
	}
	// The children first listed, then the postmaster killed first: it
	// forks nothing more, and its children are still known.
	kids := children(pm)
	if err := syscall.Kill(pm, syscall.SIGKILL); err != nil {
		tb.Fatalf("proctest: kill postmaster %d: %v", pm, err)
	}
	for _, c := range kids {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range append(kids, pm) {
		for st := procState(pid); st != 0 && st != 'Z' && st != 'X'; st = procState(pid) {
			if time.Now().After(deadline) {
				tb.Fatalf("proctest: kill: process %d still runs (state %q)", pid, st)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// StallStandby stops (SIGSTOP) the standby's WAL receiver, as a network or
// disk stall would: the standby stops taking WAL, and a synchronous
// primary's commits wait for it. The returned function resumes it.
func (h *HA) StallStandby(tb testing.TB) (resume func()) {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(h.Standby.dataDir, "postmaster.pid"))
	if err != nil {
		tb.Fatalf("proctest: stall: %v", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pm, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		tb.Fatalf("proctest: stall: postmaster.pid: %v", err)
	}
	for _, c := range children(pm) {
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(c) + "/cmdline")
		if strings.Contains(string(cmd), "walreceiver") {
			if err := syscall.Kill(c, syscall.SIGSTOP); err != nil {
				tb.Fatalf("proctest: stall walreceiver %d: %v", c, err)
			}
			return func() { _ = syscall.Kill(c, syscall.SIGCONT) }
		}
	}
	tb.Fatalf("proctest: stall: the standby runs no walreceiver")
	return nil
}
