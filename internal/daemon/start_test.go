package daemon_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/daemon"
)

// TestStopWhileStarting: while the database does not answer, /livez
// answers and /readyz says starting; a stop asked for then (SIGTERM ends
// ctx) returns nil, not an error.
func TestStopWhileStarting(t *testing.T) {
	t.Parallel()
	// A "database" that accepts connections and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	opsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"CONSENSUS_ENV": "local", "DATABASE_URL": "postgres://consensus@" + silent.Addr().String() + "/consensus?sslmode=disable&connect_timeout=60",
		"CONSENSUS_OPERATOR_TOKEN": strings.Repeat("o", 30), "CONSENSUS_TOKEN_KEY": strings.Repeat("ab", 32),
		"CONSENSUS_MAIL_URL": "maildir://" + t.TempDir(), "CONSENSUS_LISTEN": "127.0.0.1:0", "CONSENSUS_OPS_LISTEN": opsLn.Addr().String(),
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, cfg, slog.New(slog.DiscardHandler), daemon.Options{OpsListener: opsLn})
	}()
	status := func(path string) int {
		t.Helper()
		for range 100 {
			resp, err := http.Get("http://" + opsLn.Addr().String() + path)
			if err == nil {
				resp.Body.Close()
				return resp.StatusCode
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("%s never answered", path)
		return 0
	}
	if status("/livez") != http.StatusOK || status("/readyz") != http.StatusServiceUnavailable {
		t.Fatal("while migrating: want /livez 200 and /readyz 503")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stopped while starting: %v, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
}
