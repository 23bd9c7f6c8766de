package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseWrkResult(t *testing.T) {
	out := `Running 4s test @ http://127.0.0.1:4000
  2 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.10ms    1.20ms  30.00ms   90.00%
  12345 requests in 4.00s, 10.00MB read
Requests/sec:   3086.25
WRKRESULT requests=12345 duration_us=4000123 bytes=10485760 connect=0 read=2 write=0 status=3 timeout=1 p50_us=2100 p99_us=15000.5 exhausted=0
`
	r, err := parseWrkResult(out)
	if err != nil {
		t.Fatal(err)
	}
	want := wrkResult{Requests: 12345, Duration: 4000123 * time.Microsecond, Bytes: 10485760, Read: 2, Status: 3, Timeout: 1,
		P50: 2100 * time.Microsecond, P99: 15000500 * time.Nanosecond}
	if r != want {
		t.Errorf("parsed %+v\nwant   %+v", r, want)
	}
	if got := r.socketErrors(); len(got) != 2 || got["error: read"] != 2 || got["error: timeout"] != 1 {
		t.Errorf("socket errors = %v", got)
	}
	if _, err := parseWrkResult("Running 1s test\n"); err == nil {
		t.Error("output without WRKRESULT parsed")
	}
	if _, err := parseWrkResult("WRKRESULT requests=1 duration_us=2\n"); err == nil || !strings.Contains(err.Error(), "p50_us") {
		t.Errorf("missing fields: %v", err)
	}
	if _, err := parseWrkResult("WRKRESULT requests=x duration_us=2 p50_us=1 p99_us=1 status=0\n"); err == nil {
		t.Error("a non-number parsed")
	}
}

const metricsBefore = `# HELP consensus_http_requests_total API requests answered, by route pattern (never the raw path), method and status.
# TYPE consensus_http_requests_total counter
consensus_http_requests_total{method="GET",route="/api/v1/agent/invitations/{invitationId}/room",status="200"} 10
consensus_http_requests_total{method="POST",route="/api/v1/agent/invitations/{invitationId}/events",status="201"} 1.5e+06
consensus_http_requests_total{method="other",route="unmatched",status="404"} 1
# TYPE consensus_http_requests_in_flight gauge
consensus_http_requests_in_flight 0
consensus_http_request_duration_seconds_count{method="GET",route="/api/v1/agent/invitations/{invitationId}/room"} 10
`

func TestRequestCountsDelta(t *testing.T) {
	before, inFlight, err := parseRequestCounts(metricsBefore)
	if err != nil {
		t.Fatal(err)
	}
	if inFlight != 0 || len(before) != 3 || before[reqKey{"/api/v1/agent/invitations/{invitationId}/events", "POST", "201"}] != 1500000 {
		t.Fatalf("parsed %v (in flight %v)", before, inFlight)
	}
	after, inFlight, err := parseRequestCounts(`consensus_http_requests_total{method="GET",route="/api/v1/agent/invitations/{invitationId}/room",status="200"} 1010
consensus_http_requests_total{method="GET",route="/api/v1/agent/invitations/{invitationId}/room",status="499"} 2
consensus_http_requests_total{method="GET",route="/api/v1/agent/invitations/{invitationId}/room",status="304"} 5
consensus_http_requests_total{method="POST",route="/api/v1/agent/invitations/{invitationId}/events",status="201"} 1.5e+06
consensus_http_requests_total{method="other",route="unmatched",status="404"} 1
consensus_http_requests_in_flight 3
`)
	if err != nil {
		t.Fatal(err)
	}
	if inFlight != 3 {
		t.Errorf("in flight = %v", inFlight)
	}
	d := after.delta(before)
	if d.total() != 1007 || len(d) != 3 {
		t.Errorf("delta = %v", d)
	}
	ok, unexpected := d.split(expectRead)
	if ok != 1000 {
		t.Errorf("ok = %d", ok)
	}
	want := map[string]int{
		"499 (GET /api/v1/agent/invitations/{invitationId}/room)": 2,
		"304 (GET /api/v1/agent/invitations/{invitationId}/room)": 5,
	}
	if fmt.Sprint(unexpected) != fmt.Sprint(want) {
		t.Errorf("unexpected = %v, want %v", unexpected, want)
	}
	// The 499s went to requests wrk cut off (the service says so); the 304s
	// stay unexpected.
	if n := abandoned(unexpected); n != 2 || len(unexpected) != 1 || unexpected["304 (GET /api/v1/agent/invitations/{invitationId}/room)"] != 5 {
		t.Errorf("abandoned %d, left %v", n, unexpected)
	}
	for _, bad := range []string{
		`consensus_http_requests_total{method="GET",route="x} 1`,
		`consensus_http_requests_total{method="GET"} abc`,
		`consensus_http_requests_total{method="GET"}`,
	} {
		if _, _, err := parseRequestCounts(bad); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
	escaped, _, err := parseRequestCounts(`consensus_http_requests_total{method="GET",route="a\"b,}",status="200"} 7`)
	if err != nil || escaped[reqKey{`a"b,}`, "GET", "200"}] != 7 {
		t.Errorf("escaped label: %v %v", escaped, err)
	}
}

func TestLuaScripts(t *testing.T) {
	if got := luaQuote("a\"b\\c\nd\x01é"); got != `"a\"b\\c\010d\001\195\169"` {
		t.Errorf("luaQuote = %s", got)
	}
	if got := requestPath("http://127.0.0.1:80/api/v1/x/room?a=1"); got != "/api/v1/x/room?a=1" {
		t.Errorf("requestPath = %q", got)
	}
	scripts := []string{
		readLua([]readTarget{{Path: "/r", Auth: "A", ETag: `"e"`}}),
		appendLua([]appendRoom{{Body: `{"a":1}`, Slots: []appendSlot{{Path: "/e", Auth: "A", Budget: 3}}}}, "k-"),
	}
	for _, s := range scripts {
		// A response() callback would make wrk parse every answer's headers into Lua.
		if strings.Contains(s, "function response") || !strings.Contains(s, "WRKRESULT ") {
			t.Errorf("script:\n%s", s)
		}
	}
	if wrkThreads(16) != 2 || wrkThreads(1) != 1 || wrkThreads(3) != 1 {
		t.Error("wrkThreads")
	}
}

// TestWrkScripts runs the generated scripts with the real wrk against a
// recording server: every append is a new key, no participant goes past
// its budget, used-up threads go to the 404 path, reads carry a
// participant's credential and ETag. Fails without wrk, which
// deploy/local/test.sh installs.
func TestWrkScripts(t *testing.T) {
	bin, err := findWrk()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	keys := map[string]int{}
	perPath := map[string]int{}
	reads := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == http.MethodPost:
			keys[r.Header.Get("Idempotency-Key")]++
			perPath[r.URL.Path+" "+r.Header.Get("Authorization")]++
			w.WriteHeader(http.StatusCreated)
		case r.URL.Path == exhaustedPath:
			w.WriteHeader(http.StatusNotFound)
		default:
			reads[r.URL.Path+" "+r.Header.Get("Authorization")+" "+r.Header.Get("If-None-Match")]++
			w.WriteHeader(http.StatusNotModified)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := cpuWatch{cl: &cluster{}}

	rooms := []appendRoom{
		{Body: `{"action":"comment"}`, Slots: []appendSlot{{0, "/r1/p1", "P1", 5}, {1, "/r1/p2", "P2", 3}, {0, "/r1/p3", "P3", 0}}},
		{Body: `{"action":"comment"}`, Slots: []appendSlot{{1, "/r2/p1", "Q1", 4}, {0, "/r2/p2", "Q2", 2}}},
	}
	run, err := runWrk(ctx, bin, t.TempDir(), w, wrkLoad{Name: "append", Script: appendLua(rooms, "k-"), BaseURL: srv.URL, Conns: 2, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for k, n := range keys {
		if n != 1 {
			t.Errorf("key %q sent %d times", k, n)
		}
	}
	// wrk calls request() once in its first thread to check the script,
	// without sending: that one slot of thread 0 is lost, never exceeded.
	budget := map[string]int{"/r1/p1 P1": 5, "/r1/p2 P2": 3, "/r2/p1 Q1": 4, "/r2/p2 Q2": 2}
	sent := 0
	for k, n := range perPath {
		if n > budget[k] {
			t.Errorf("%s: %d appends, budget %d", k, n, budget[k])
		}
		sent += n
	}
	if len(perPath) < 3 || sent < 13 {
		t.Errorf("appends per participant %v, budgets %v", perPath, budget)
	}
	if run.Res.Exhausted == 0 || run.Res.Status == 0 {
		t.Errorf("no used-up requests counted: %+v", run.Res)
	}
	if run.F.ClientCPU <= 0 || run.F.Elapsed < time.Second/2 {
		t.Errorf("figures %+v", run.F)
	}

	ts := []readTarget{{"/room", "P1", `"e1"`}, {"/room", "P2", `"e2"`}}
	run, err = runWrk(ctx, bin, t.TempDir(), w, wrkLoad{Name: "read", Script: readLua(ts), BaseURL: srv.URL, Conns: 2, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(reads) != 2 || reads[`/room P1 "e1"`] == 0 || reads[`/room P2 "e2"`] == 0 {
		t.Errorf("reads %v", reads)
	}
	if run.F.OK != int(run.Res.Requests) || run.F.errors() != 0 || run.F.ReqPerSec <= 0 {
		t.Errorf("read figures %+v", run.F)
	}
}
