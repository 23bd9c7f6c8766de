package proctest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consensus-md/consensus/internal/proctest"
)

// TestPgShPinsThePort: deploy/local/pg.sh serves and prints the same
// socket whatever PGPORT the caller has, and a server that runs but does
// not answer on that socket (started with another port) is restarted
// rather than reported as ready.
func TestPgShPinsThePort(t *testing.T) {
	root, err := proctest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "pgsh-")
	if err != nil {
		t.Fatal(err)
	}
	pgsh := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(root, "deploy/local/pg.sh"), append([]string{args[0], dir}, args[1:]...)...)
		cmd.Env = append(os.Environ(), env...)
		var errb strings.Builder
		cmd.Stderr = &errb
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("pg.sh %v: %v\n%s", args, err, errb.String())
		}
		return strings.TrimSpace(string(out))
	}
	t.Cleanup(func() {
		pgsh(nil, "stop")
		_ = os.RemoveAll(dir)
	})
	answers := func(url string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		var one int
		return c.QueryRow(ctx, "SELECT 1").Scan(&one)
	}

	url := pgsh([]string{"PGPORT=5599"}, "start", "--fast")
	if !strings.Contains(url, "port=5432") {
		t.Fatalf("the printed URL names no port: %s", url)
	}
	// The connecting shell has yet another PGPORT: the URL still names the
	// socket the server listens on.
	t.Setenv("PGPORT", "6001")
	if err := answers(url); err != nil {
		t.Fatalf("started with PGPORT=5599, connected with PGPORT=6001: %v", err)
	}
	if again := pgsh([]string{"PGPORT=7001"}, "start", "--fast"); again != url {
		t.Fatalf("a second start printed %s, the first %s", again, url)
	}

	// A server left running on another port (by an older pg.sh, say).
	pgsh(nil, "stop")
	pgctl := ""
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl"); len(m) > 0 {
		pgctl = m[len(m)-1]
	} else if p, err := exec.LookPath("pg_ctl"); err == nil {
		pgctl = p
	} else {
		t.Fatal("no pg_ctl")
	}
	sock := strings.SplitN(strings.SplitN(url, "host=", 2)[1], "&", 2)[0]
	data := filepath.Join(filepath.Dir(sock), "data")
	args := []string{pgctl, "-D", data, "-l", filepath.Join(filepath.Dir(data), "server.log"),
		"-o", "-c listen_addresses='' -c port=5433 -c unix_socket_directories='" + sock + "'", "-w", "start"}
	if os.Getuid() == 0 {
		args = append([]string{"runuser", "-u", "postgres", "--"}, args...)
	}
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl start on port 5433: %v\n%s", err, out)
	}
	if err := answers(url); err == nil {
		t.Fatal("the server on port 5433 answers the URL for 5432: the premise broke")
	}
	if again := pgsh(nil, "start", "--fast"); again != url {
		t.Fatalf("start printed %s, want %s", again, url)
	}
	if err := answers(url); err != nil {
		t.Fatalf("after pg.sh start found a server on another port: %v", err)
	}
}
