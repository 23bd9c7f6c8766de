package proctest

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Postgres is a private PostgreSQL cluster of one test, started with
// deploy/local/pg.sh (which runs it as the postgres user when the test runs
// as root) in a fresh directory. A test may stop, restart, freeze and thaw
// it; it is thawed, stopped and removed when the test ends. Never point it
// at the shared test cluster.
type Postgres struct {
	root    string // module root, for deploy/local/pg.sh
	dir     string // the directory given to pg.sh
	dataDir string
	url     string

	mu     sync.Mutex
	frozen []int
}

// StartPostgres initializes and starts a private cluster (fsync off).
func StartPostgres(tb testing.TB) *Postgres {
	tb.Helper()
	p := newPostgres(tb)
	p.Start(tb)
	p.locate(tb)
	return p
}

// newPostgres makes the directory of a private cluster, to be started, and
// stops and removes it when the test ends.
func newPostgres(tb testing.TB) *Postgres {
	tb.Helper()
	root, err := ModuleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	// A short path under /tmp: the socket path must stay under 107 bytes,
	// and the postgres user must be able to reach it.
	dir, err := os.MkdirTemp("", "proctest-pg-")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Postgres{root: root, dir: dir}
	tb.Cleanup(func() {
		p.thaw()
		_ = p.pgsh("stop")
		if alt, err := os.Readlink(filepath.Join(dir, "cluster-location")); err == nil {
			_ = os.RemoveAll(alt)
		}
		_ = os.RemoveAll(dir)
	})
	return p
}

// locate finds the data directory from the printed URL's socket directory.
func (p *Postgres) locate(tb testing.TB) {
	tb.Helper()
	u, err := url.Parse(p.url)
	if err != nil {
		tb.Fatalf("proctest: pg.sh printed %q: %v", p.url, err)
	}
	sock := u.Query().Get("host")
	if sock == "" {
		tb.Fatalf("proctest: pg.sh printed %q: no socket directory", p.url)
	}
	p.dataDir = filepath.Join(filepath.Dir(sock), "data")
	if _, err := os.Stat(filepath.Join(p.dataDir, "PG_VERSION")); err != nil {
		tb.Fatalf("proctest: no cluster at %s: %v", p.dataDir, err)
	}
}

// URL is the connection URL of the cluster's "consensus" database, as
// the service's role (consensus_app, which row-level security binds).
func (p *Postgres) URL() string { return p.url }

// AdminURL is the connection URL of the cluster's "consensus" database as
// its superuser, which bypasses row-level security.
func (p *Postgres) AdminURL(tb testing.TB) string {
	tb.Helper()
	cmd := exec.Command(filepath.Join(p.root, "deploy/local/pg.sh"), "admin-url", p.dir)
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("proctest: pg.sh admin-url: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func (p *Postgres) pgsh(args ...string) error {
	cmd := exec.Command(filepath.Join(p.root, "deploy/local/pg.sh"), append([]string{args[0], p.dir}, args[1:]...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pg.sh %s: %v: %s", args[0], err, errb.String())
	}
	if args[0] == "start" {
		p.url = strings.TrimSpace(out.String())
	}
	return nil
}

// Start starts the cluster (initializing it the first time) and returns
// once it accepts connections.
func (p *Postgres) Start(tb testing.TB) {
	tb.Helper()
	if err := p.pgsh("start", "--fast"); err != nil {
		tb.Fatalf("proctest: %v", err)
	}
}

// Stop shuts the cluster down (pg_ctl stop -m fast): every connection is
// closed and new ones are refused until Start.
func (p *Postgres) Stop(tb testing.TB) {
	tb.Helper()
	if err := p.pgsh("stop"); err != nil {
		tb.Fatalf("proctest: %v", err)
	}
}

// Freeze sends SIGSTOP to the postmaster and then to every one of its
// children: connections stay open and connects are queued, but nothing
// answers until Thaw.
func (p *Postgres) Freeze(tb testing.TB) {
	tb.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen != nil {
		tb.Fatal("proctest: the cluster is already frozen")
	}
	b, err := os.ReadFile(filepath.Join(p.dataDir, "postmaster.pid"))
	if err != nil {
		tb.Fatalf("proctest: freeze: %v", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pm, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		tb.Fatalf("proctest: freeze: postmaster.pid: %v", err)
	}
	// The postmaster first: stopped, it forks no new backend.
	if err := syscall.Kill(pm, syscall.SIGSTOP); err != nil {
		tb.Fatalf("proctest: freeze postmaster %d: %v", pm, err)
	}
	p.frozen = []int{pm}
	for _, c := range children(pm) {
		if syscall.Kill(c, syscall.SIGSTOP) == nil {
			p.frozen = append(p.frozen, c)
		}
	}
	// Wait until every frozen process is really stopped (state T).
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range p.frozen {
		// A backend that exits meanwhile stays a zombie (Z) under its stopped
		// postmaster, or is gone (0): neither will ever reach T.
		for st := procState(pid); st != 'T' && st != 't' && st != 'Z' && st != 'X' && st != 0; st = procState(pid) {
			if time.Now().After(deadline) {
				tb.Fatalf("proctest: freeze: process %d did not stop (state %q)", pid, st)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// Thaw sends SIGCONT to everything Freeze stopped.
func (p *Postgres) Thaw(tb testing.TB) {
	tb.Helper()
	p.thaw()
}

func (p *Postgres) thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.frozen) - 1; i >= 0; i-- {
		_ = syscall.Kill(p.frozen[i], syscall.SIGCONT)
	}
	p.frozen = nil
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) >= 2 {
			if ppid, err := strconv.Atoi(f[1]); err == nil && ppid == pid {
				out = append(out, n)
			}
		}
	}
	return out
}

// procState is the state letter of /proc/pid/stat, or 0 when it is gone.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}
