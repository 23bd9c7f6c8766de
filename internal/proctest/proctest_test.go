package proctest_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/proctest"
)

func TestMain(m *testing.M) { proctest.Main(m) }

func health(url string) (int, string) {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url + "/api/health")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestReplicasKillRestart: two replicas serve one database; a SIGKILLed
// replica comes back on the same address, and its logs span both runs.
func TestReplicasKillRestart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs consensusd")
	}
	c := proctest.Start(t, proctest.Config{DatabaseURL: pgtest.URL(t)}, 2)
	for _, u := range c.URLs() {
		if st, body := health(u); st != 200 {
			t.Fatalf("%s: %d %s", u, st, body)
		}
	}
	r := c.Replicas[1]
	addr := r.Addr()
	r.Kill(t)
	if r.Running() {
		t.Fatal("running after Kill")
	}
	if st, _ := health(r.URL()); st != 0 {
		t.Fatalf("a killed replica answered %d", st)
	}
	r.Restart(t)
	if r.Addr() != addr {
		t.Fatalf("restarted on %s, want %s", r.Addr(), addr)
	}
	if st, body := health(r.URL()); st != 200 {
		t.Fatalf("after restart: %d %s", st, body)
	}
	if n := strings.Count(r.Logs(), "consensusd serving"); n != 2 {
		t.Fatalf("%d serving lines in the logs, want 2", n)
	}
}

// TestPostgresStopFreeze: the private cluster stops, starts, freezes (a
// query does not answer) and thaws (the query completes).
func TestPostgresStopFreeze(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a PostgreSQL cluster")
	}
	pg := proctest.StartPostgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
	pg.Freeze(t)
	done := make(chan error, 1)
	go func() { done <- conn.QueryRow(ctx, "SELECT 1").Scan(&one) }()
	select {
	case err := <-done:
		t.Fatalf("a frozen cluster answered: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	pg.Thaw(t)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after thaw: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer 10s after thaw")
	}
	conn.Close(ctx)
	pg.Stop(t)
	if c, err := pgx.Connect(ctx, pg.URL()); err == nil {
		c.Close(ctx)
		t.Fatal("connected to a stopped cluster")
	}
	pg.Start(t)
	c2, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	c2.Close(ctx)
}
