package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/proctest"
)

// agreementBody is an operator create request with a unique title.
func agreementBody(title string) []byte {
	b, _ := json.Marshal(map[string]any{
		"title": title, "objective": "Survive a graceful shutdown.", "rules": []string{},
		"deadline":     time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339),
		"participants": []map[string]any{{"displayName": "A", "kind": "agent", "email": "a@example.test", "required": true}},
	})
	return b
}

// trickle is a body that sends its bytes spread over d.
type trickle struct {
	b    []byte
	step time.Duration
}

func (r *trickle) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	time.Sleep(r.step)
	n := copy(p[:1], r.b)
	r.b = r.b[n:]
	return n, nil
}

// result is what one request's client saw.
type result struct {
	title  string
	status int // 0: the request failed on the client side
	err    error
}

// TestSIGTERMDrainsInFlightRequests runs the real binary, keeps it busy
// with fast creates from several clients and slow uploads, and sends
// SIGTERM. Readiness fails first while the API still answers; then the
// listener closes; uploads in flight finish within the grace period, one
// slower than the grace is cut; the process exits 0. Every request either
// completed (201 and stored) or never started (a client error and
// nothing stored): the database is compared with what each client saw.
func TestSIGTERMDrainsInFlightRequests(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs consensusd")
	}
	const delay, grace = 2 * time.Second, 5 * time.Second
	dbURL := pgtest.URL(t)
	c := proctest.Start(t, proctest.Config{DatabaseURL: dbURL, Env: map[string]string{
		"CONSENSUS_RATE_LIMIT": "120", "CONSENSUS_OUTBOX_POLL": "1s", // the service's defaults
		"CONSENSUS_SHUTDOWN_DELAY": delay.String(), "CONSENSUS_SHUTDOWN_GRACE": grace.String(),
	}}, 1)
	d, token := c.Replicas[0], c.Config.OperatorToken
	if body := opsGet(t, d.OpsAddr(), "/readyz"); !strings.Contains(body, `"ready"`) {
		t.Fatalf("/readyz before SIGTERM: %s", body)
	}
	create := func(client *http.Client, title string, body io.Reader) result {
		req, _ := http.NewRequest(http.MethodPost, d.URL()+"/api/v1/admin/agreements", body)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return result{title: title, err: err}
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return result{title: title, status: resp.StatusCode}
	}

	var mu sync.Mutex
	var results []result
	record := func(r result) { mu.Lock(); results = append(results, r); mu.Unlock() }
	var wg sync.WaitGroup
	// Slow uploads: 3 that finish 1.5 s after SIGTERM (inside the grace),
	// 1 that would take 20 s (cut at the end of the grace).
	slow := func(title string, total time.Duration) {
		defer wg.Done()
		b := agreementBody(title)
		record(create(&http.Client{}, title, &trickle{b: b, step: total / time.Duration(len(b))}))
	}
	start := time.Now()
	for i := range 3 {
		wg.Add(1)
		go slow(fmt.Sprintf("slow-%d", i), 3*time.Second)
	}
	wg.Add(1)
	go slow("too-slow", 20*time.Second)
	// Fast creates from 4 keep-alive clients, until the service is gone.
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 30 * time.Second}
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				title := fmt.Sprintf("fast-%d-%d", w, n)
				r := create(client, title, bytes.NewReader(agreementBody(title)))
				record(r)
				if r.err != nil {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}

	time.Sleep(1500 * time.Millisecond)
	signaled := time.Now()
	d.Signal(t, syscall.SIGTERM)
	// Within the delay: not ready, yet the API still answers.
	d.WaitLog(t, "shutting down: readiness fails now", 1)
	if body := opsGet(t, d.OpsAddr(), "/readyz"); !strings.Contains(body, `"draining"`) {
		t.Fatalf("/readyz after SIGTERM: %s", body)
	}
	resp, err := http.Get(d.URL() + "/api/health")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the API during the shutdown delay: %v", err)
	}
	resp.Body.Close()
	if since := time.Since(signaled); since >= delay {
		t.Fatalf("the checks took %s, longer than the delay; the test cannot tell the order", since)
	}

	if err := d.Wait(t, delay+grace+15*time.Second); err != nil {
		t.Fatalf("consensusd exited with %v, want 0", err)
	}
	took := time.Since(signaled)
	close(stop)
	wg.Wait()
	if took < delay+grace-time.Second {
		t.Errorf("exited %s after SIGTERM: the too-slow upload should have held it for the grace period", took)
	}
	for _, msg := range []string{"grace period over: closing the connections still open", "consensusd stopped"} {
		if d.LogCount(msg) != 1 {
			t.Errorf("log lacks %q", msg)
		}
	}
	t.Logf("SIGTERM %s after start; exit %s later", signaled.Sub(start), took)

	// What the database holds against what each client saw.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.ServiceURL(dbURL))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT (canonical_json::jsonb)->>'title' FROM revisions")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, s := range stored {
		have[s] = true
	}
	completed, neverStarted := 0, 0
	for _, r := range results {
		switch {
		case r.status == http.StatusCreated && have[r.title]:
			completed++
		case r.err != nil && !have[r.title]:
			neverStarted++
		case r.err != nil:
			t.Errorf("%s: stored, but its client got %v: a request was cut after it started", r.title, r.err)
		default:
			t.Errorf("%s: status %d, stored %v", r.title, r.status, have[r.title])
		}
		if strings.HasPrefix(r.title, "slow-") && r.status != http.StatusCreated {
			t.Errorf("%s was in flight at SIGTERM and did not complete: %v", r.title, r.err)
		}
		if r.title == "too-slow" && (r.err == nil || have[r.title]) {
			t.Errorf("the upload slower than the grace period: status %d, stored %v", r.status, have[r.title])
		}
	}
	if len(stored) != completed {
		t.Errorf("%d agreements stored, %d answered 201", len(stored), completed)
	}
	if completed < 10 || neverStarted < 4 {
		t.Errorf("%d completed, %d never started: the load did not straddle the shutdown", completed, neverStarted)
	}
	t.Logf("%d requests completed, %d never started", completed, neverStarted)
	var refused int
	for _, r := range results {
		if r.err != nil && errors.Is(r.err, syscall.ECONNREFUSED) {
			refused++
		}
	}
	t.Logf("%d refused by a closed listener", refused)
}
