package ops

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/venue"
)

// fakeDB answers as told.
type fakeDB struct {
	mu                sync.Mutex
	ping, schema, out error
	hang              bool
	depth             int64
}

func (f *fakeDB) wait(ctx context.Context) error {
	f.mu.Lock()
	hang := f.hang
	f.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (f *fakeDB) Ping(ctx context.Context) error {
	if err := f.wait(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ping
}

func (f *fakeDB) SchemaCurrent(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.schema
}
func (f *fakeDB) PoolStats() store.PoolStats {
	return store.PoolStats{AcquiredConns: 3, MaxConns: 8, TotalConns: 5, IdleConns: 2, AcquireCount: 41, AcquireDuration: 1500 * time.Millisecond}
}

func (f *fakeDB) OutboxDepth(ctx context.Context) (int64, error) {
	if err := f.wait(ctx); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.depth, f.out
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

// TestReadiness: starting, then ready while the database answers and its
// schema is current, unavailable otherwise (in bounded time), draining for
// good once shutdown begins; liveness stays 200 throughout.
func TestReadiness(t *testing.T) {
	t.Parallel()
	srv := NewServer(NewMetrics("test"), slog.New(slog.DiscardHandler), false)
	h := srv.Handler()
	db := &fakeDB{}
	status := func(want int, field, value string) {
		t.Helper()
		code, body := get(t, h, "/readyz")
		var p map[string]string
		if err := json.Unmarshal([]byte(body), &p); err != nil || code != want || p[field] != value {
			t.Fatalf("/readyz: %d %s, want %d with %s %q", code, body, want, field, value)
		}
		if code, _ := get(t, h, "/livez"); code != http.StatusOK {
			t.Fatalf("/livez: %d", code)
		}
	}
	status(503, "status", "starting")
	srv.Serving(db)
	status(200, "status", "ready")
	db.mu.Lock()
	db.schema = errors.New("store: schema at version 1, this release needs 2")
	db.mu.Unlock()
	status(503, "schema", "behind")
	db.mu.Lock()
	db.schema, db.ping = nil, errors.New("connection refused")
	db.mu.Unlock()
	status(503, "database", "unreachable")
	db.mu.Lock()
	db.ping, db.hang = nil, true
	db.mu.Unlock()
	start := time.Now()
	status(503, "database", "timeout")
	if d := time.Since(start); d > CheckTimeout+time.Second {
		t.Fatalf("a hanging database took %s to report", d)
	}
	db.mu.Lock()
	db.hang = false
	db.mu.Unlock()
	status(200, "status", "ready")
	srv.Draining()
	status(503, "status", "draining")
	srv.Serving(db) // a late call cannot make a draining process ready
	status(503, "status", "draining")
}

// TestPprofOnlyWhenEnabled: the profiler's paths are 404 unless enabled.
func TestPprofOnlyWhenEnabled(t *testing.T) {
	t.Parallel()
	off := NewServer(NewMetrics("test"), slog.New(slog.DiscardHandler), false).Handler()
	on := NewServer(NewMetrics("test"), slog.New(slog.DiscardHandler), true).Handler()
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
		if code, _ := get(t, off, path); code != http.StatusNotFound {
			t.Errorf("%s without CONSENSUS_PPROF: %d", path, code)
		}
		if code, _ := get(t, on, path); code != http.StatusOK {
			t.Errorf("%s with CONSENSUS_PPROF: %d", path, code)
		}
	}
}

// TestMetricsContent: every series the alert rules and docs name is
// there, with the labels they use, and label values stay in closed sets.
func TestMetricsContent(t *testing.T) {
	t.Parallel()
	m := NewMetrics("v1.2.3")
	db := &fakeDB{depth: 7}
	m.WatchDatabase(db)
	m.WatchRoomCache(func() venue.RoomCacheStats {
		return venue.RoomCacheStats{Bytes: 1000, Limit: 4096, Rooms: 2, Hits: 5, Tails: 4, Wholes: 3, Evictions: 1}
	})
	m.RequestStarted()
	m.RequestDone("/api/v1/agent/invitations/{invitationId}/events", http.MethodPost, 201, 30*time.Millisecond)
	m.RequestStarted()
	m.RequestDone("unmatched", "BREW", 404, time.Millisecond)
	m.EventStored("agree")
	m.EventStored("'; drop table events; --")
	m.OutcomeSettled("reached")
	m.OutcomeSettled("3f1e0c9a-0000-4000-8000-000000000000")
	m.DeliveryAttempted(store.DeliveryRetry)
	m.CertificateLoaded(time.Unix(1900000000, 0))
	m.CertificateReloaded(errors.New("bad file"))
	h := NewServer(m, slog.New(slog.DiscardHandler), false).Handler()
	code, body := get(t, h, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`consensus_http_requests_total{method="POST",route="/api/v1/agent/invitations/{invitationId}/events",status="201"} 1`,
		`consensus_http_requests_total{method="other",route="unmatched",status="404"} 1`,
		`consensus_http_request_duration_seconds_bucket{method="POST",route="/api/v1/agent/invitations/{invitationId}/events",le="0.05"} 1`,
		`consensus_http_requests_in_flight 0`,
		`consensus_events_total{action="agree"} 1`,
		`consensus_events_total{action="comment"} 0`,
		`consensus_events_total{action="other"} 1`,
		`consensus_outcomes_total{status="reached"} 1`,
		`consensus_outcomes_total{status="other"} 1`,
		`consensus_mail_delivery_attempts_total{result="retry"} 1`,
		`consensus_mail_delivery_attempts_total{result="failed"} 0`,
		`consensus_outbox_depth 7`,
		`consensus_db_pool_acquired_conns 3`,
		`consensus_db_pool_max_conns 8`,
		`consensus_db_pool_acquire_duration_seconds_total 1.5`,
		`consensus_room_cache_bytes 1000`,
		`consensus_room_cache_limit_bytes 4096`,
		`consensus_room_cache_rooms 2`,
		`consensus_room_cache_reads_total{result="hit"} 5`,
		`consensus_room_cache_reads_total{result="tail"} 4`,
		`consensus_room_cache_reads_total{result="whole"} 3`,
		`consensus_room_cache_evictions_total 1`,
		`consensus_build_info{goversion="go`,
		`version="v1.2.3"} 1`,
		`consensus_tls_certificate_expiry_timestamp_seconds 1.9e+09`,
		`consensus_tls_reloads_total{result="error"} 1`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, leak := range []string{"drop table", "3f1e0c9a", "BREW"} {
		if strings.Contains(body, leak) {
			t.Errorf("/metrics carries %q in a label", leak)
		}
	}
	// A database that does not answer leaves the depth out, in bounded time.
	db.mu.Lock()
	db.hang = true
	db.mu.Unlock()
	start := time.Now()
	code, body = get(t, h, "/metrics")
	if code != http.StatusOK || strings.Contains(body, "consensus_outbox_depth ") || !strings.Contains(body, "consensus_db_pool_max_conns 8") {
		t.Fatalf("with a hanging database: %d\n%s", code, body)
	}
	if d := time.Since(start); d > depthTimeout+time.Second {
		t.Fatalf("the scrape took %s", d)
	}
}

// TestAlertRulesUseServedSeries: every consensus_* series the shipped
// PrometheusRule queries is one /metrics serves, so renaming a metric
// without its alert (or the reverse) fails here.
func TestAlertRulesUseServedSeries(t *testing.T) {
	t.Parallel()
	rules, err := os.ReadFile("../../deploy/kubernetes/base/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics("test")
	m.WatchDatabase(&fakeDB{})
	m.RequestStarted()
	m.RequestDone("/x", http.MethodPost, 201, time.Millisecond)
	// As the daemon runs with a witness configured that cosigned once.
	m.LogWitnesses([]string{"w1"})
	m.LogWitnessed("w1", 1)
	_, body := get(t, NewServer(m, slog.New(slog.DiscardHandler), false).Handler(), "/metrics")
	served := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		if name, _, _ := strings.Cut(line, " "); name != "" && !strings.HasPrefix(name, "#") {
			name, _, _ = strings.Cut(name, "{")
			served[name] = true
		}
	}
	used := regexp.MustCompile(`\bconsensus_[a-z_]*[a-z]\b`).FindAllString(string(rules), -1)
	if len(used) < 5 {
		t.Fatalf("only %d consensus_ series found in the rules", len(used))
	}
	for _, name := range used {
		if !served[name] {
			t.Errorf("the alert rules query %s, which /metrics does not serve", name)
		}
	}
}

// A witness's failure counters are served at zero from the start: a
// counter series that first appears at 1 shows no increase to Prometheus,
// so the first refusal would not fire ConsensusLogWitnessRefused.
func TestWitnessFailureCountersStartAtZero(t *testing.T) {
	t.Parallel()
	m := NewMetrics("test")
	m.LogWitnesses([]string{"w1"})
	_, body := get(t, NewServer(m, slog.New(slog.DiscardHandler), false).Handler(), "/metrics")
	for _, want := range []string{
		`consensus_log_witness_failures_total{result="refused",witness="w1"} 0`,
		`consensus_log_witness_failures_total{result="unreachable",witness="w1"} 0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	m.LogWitnessFailed("w1", true)
	_, body = get(t, NewServer(m, slog.New(slog.DiscardHandler), false).Handler(), "/metrics")
	if !strings.Contains(body, `consensus_log_witness_failures_total{result="refused",witness="w1"} 1`+"\n") {
		t.Error("a refusal is not counted")
	}
}
