package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	// The smoke run re-executes this test binary as the baseline servers.
	if u := os.Getenv(lookupEnv); u != "" {
		if err := serveLookup(u, os.Stdout); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	if dir := os.Getenv(staticEnv); dir != "" {
		if err := serveStatic(dir, os.Stdout); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSmoke runs the whole bench end to end at a tiny scale (-smoke), so
// make test keeps the tool working; its figures are not checked. A missing
// tool fails it: deploy/local/test.sh installs them (issue 43).
func TestSmoke(t *testing.T) {
	for _, prog := range []string{"pgbench", "pg_ctl", "initdb"} {
		if _, err := findPGBin(prog); err != nil {
			t.Fatalf("the bench smoke run needs %s (Debian package postgresql; deploy/local/test.sh installs it as root): %v", prog, err)
		}
	}
	if _, err := findWrk(); err != nil {
		t.Fatalf("the bench smoke run needs wrk (Debian package wrk; deploy/local/test.sh installs it as root): %v", err)
	}
	if err := findWitnessTools(); err != nil {
		t.Fatalf("the bench smoke run: %v; deploy/local/test.sh installs it as root", err)
	}
	root, err := findRoot()
	if err != nil {
		t.Fatal(err)
	}
	cfg := smokeConfig(defaultConfig())
	cfg.Root = root
	// Its own cluster and work directory: a make bench may run meanwhile.
	cfg.PGDir = filepath.Join(root, ".data", "pgbench-smoke")
	cfg.WorkDir = filepath.Join(root, ".data", "bench-smoke")
	tmp := t.TempDir()
	cfg.Out = filepath.Join(tmp, "results.md")
	cfg.Profiles = filepath.Join(tmp, "profiles")
	cfg.Invocation = "go test ./internal/cmd/consensus-bench -run TestSmoke"
	var out bytes.Buffer
	cfg.Stdout = &out
	if err := os.MkdirAll(filepath.Join(root, ".data"), 0o711); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := run(ctx, cfg); err != nil {
		t.Fatalf("smoke run: %v\n%s", err, out.String())
	}
	md, err := os.ReadFile(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"SMOKE RUN", "## Ratios against the targets", "event append,", "full room read, 12 events",
		"304 (If-None-Match), 40 events", "peak RSS of consensusd", "flatness: append", "flatness: 304",
		"| exchange |", "| claim |", "pgbench (PostgreSQL)", "fsync=on",
		"## Listeners", "listeners: append ratio with them ÷ without", "| round | service events/s | service latency | pgbench tps | ratio |",
		"## Listeners with the parked connections off", "listeners, parked connections off: post to wake",
		"## Transparency log", "log: integration of 500 rooms", "log: deciding 201 → proof cosigned by 1 witness, 3 rooms",
		"3 verified, 0 missing", "log: event append", "log: one busy room ratio, drop",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
	// The ratio table is what the run prints last.
	if last := strings.TrimSpace(out.String()); !strings.HasSuffix(last, strings.TrimSpace(lastLine(string(md), "| flatness: 304"))) {
		t.Errorf("stdout does not end with the ratio table:\n%s", out.String())
	}
}

func lastLine(text, prefix string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return "\x00missing " + prefix
}

func TestStatsHelpers(t *testing.T) {
	s := spreadOf([]float64{3, 1, 2, 10})
	if s.med != 2.5 || s.lo != 1 || s.hi != 10 {
		t.Errorf("spreadOf = %+v", s)
	}
	lat := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if q := quantile(lat, 0.5); q != 5 {
		t.Errorf("p50 = %v", q)
	}
	if q := quantile(lat, 0.99); q != 10 {
		t.Errorf("p99 = %v", q)
	}
	for x, want := range map[float64]string{0.158: "0.16", 0.04: "0.040", 0.0093: "0.0093", 0.001: "0.0010", 1.61: "1.61"} {
		if got := fmtRatio(x); got != want {
			t.Errorf("fmtRatio(%v) = %q, want %q", x, got, want)
		}
	}
	if got := thousands(27335.4); got != "27,335" {
		t.Errorf("thousands = %q", got)
	}
	if v := verdict(spread{med: 0.5, lo: 0.2, hi: 0.7}, 0.6, true); v != "no (spread crosses the target)" {
		t.Errorf("verdict = %q", v)
	}
	out := "tps = 2733.523451 (without initial connection time)\nnumber of transactions actually processed: 10934\nnumber of failed transactions: 0 (0.000%)\n"
	if m := tpsRE.FindStringSubmatch(out); m == nil || m[1] != "2733.523451" {
		t.Errorf("tps: %v", m)
	}
	if m := doneRE.FindStringSubmatch(out); m == nil || m[1] != "10934" {
		t.Errorf("done: %v", m)
	}
}

// TestProfilesFromOpsListener checks the pprof capture against a stand-in
// for the ops listener the service will have (net/http/pprof handlers).
func TestProfilesFromOpsListener(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	cfg := defaultConfig()
	cfg.Profiles = t.TempDir()
	cfg.Stdout = &bytes.Buffer{}
	b := &bench{cfg: cfg, svc: &service{ops: strings.TrimPrefix(srv.URL, "http://")}}
	ctx := context.Background()
	ok, note := b.probePProf(ctx)
	if !ok {
		t.Fatalf("probe: %s", note)
	}
	b.pprofOK = true
	if err := b.startProfiles(ctx, "unit", 1).wait(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"unit.cpu.pprof", "unit.allocs.pprof"} {
		if st, err := os.Stat(filepath.Join(cfg.Profiles, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Unreachable: the note says so and nothing is captured.
	srv.Close()
	if ok, note := b.probePProf(ctx); ok || !strings.Contains(note, "no profiles") {
		t.Errorf("probe of a closed listener: %v %q", ok, note)
	}
}

func TestTail(t *testing.T) {
	if p50, p99, worst := tail(nil); p50 != 0 || p99 != 0 || worst != 0 {
		t.Fatalf("tail of nothing: %s %s %s", p50, p99, worst)
	}
	ds := []time.Duration{9, 1, 5, 3, 7}
	if p50, p99, worst := tail(ds); p50 != 5 || p99 != 9 || worst != 9 {
		t.Fatalf("tail: %s %s %s", p50, p99, worst)
	}
}
