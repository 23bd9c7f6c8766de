package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// wrk (Debian package wrk) drives append, read and 304: a C client that
// spends a few tens of µs of CPU per request where vegeta's net/http client spent
// 100-150 µs, on the same two cores as the server. A generated Lua script
// picks each request; its done() prints one WRKRESULT line.

const wrkPackage = "wrk"

// findWrk returns wrk's path, or says how to get it.
func findWrk() (string, error) {
	p, err := exec.LookPath("wrk")
	if err != nil {
		return "", fmt.Errorf("wrk not found on PATH: the bench uses it as the load generator for append, read and 304; install the Debian package %q (apt-get install -y %s; `make bench` does it when run as root)", wrkPackage, wrkPackage)
	}
	return p, nil
}

// wrkResult is what the script's done() prints.
type wrkResult struct {
	Requests  int64 // completed answers (any status)
	Duration  time.Duration
	Bytes     int64
	Connect   int64 // socket errors
	Read      int64
	Write     int64
	Status    int64 // answers with a status ≥ 400
	Timeout   int64
	P50, P99  time.Duration
	Exhausted int64 // append: requests sent when the thread's participants were used up
}

func (r wrkResult) socketErrors() map[string]int {
	out := map[string]int{}
	for name, n := range map[string]int64{"connect": r.Connect, "read": r.Read, "write": r.Write, "timeout": r.Timeout} {
		if n > 0 {
			out["error: "+name] = int(n)
		}
	}
	return out
}

const wrkResultPrefix = "WRKRESULT "

// parseWrkResult finds the WRKRESULT line in wrk's output:
// "WRKRESULT requests=N duration_us=N bytes=N connect=N read=N write=N
// status=N timeout=N p50_us=N p99_us=N exhausted=N".
func parseWrkResult(out string) (wrkResult, error) {
	var r wrkResult
	var line string
	for l := range strings.SplitSeq(out, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), wrkResultPrefix); ok {
			line = rest
		}
	}
	if line == "" {
		return r, errors.New("no WRKRESULT line in wrk's output")
	}
	fields := map[string]*int64{
		"requests": &r.Requests, "bytes": &r.Bytes, "connect": &r.Connect, "read": &r.Read,
		"write": &r.Write, "status": &r.Status, "timeout": &r.Timeout, "exhausted": &r.Exhausted,
	}
	durs := map[string]*time.Duration{"duration_us": &r.Duration, "p50_us": &r.P50, "p99_us": &r.P99}
	seen := map[string]bool{}
	for _, kv := range strings.Fields(line) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return r, fmt.Errorf("WRKRESULT: malformed field %q", kv)
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return r, fmt.Errorf("WRKRESULT: %s: %w", k, err)
		}
		switch {
		case fields[k] != nil:
			*fields[k] = int64(x)
		case durs[k] != nil:
			*durs[k] = time.Duration(x * float64(time.Microsecond))
		default:
			continue // a field this bench does not know
		}
		seen[k] = true
	}
	for _, k := range []string{"requests", "duration_us", "p50_us", "p99_us", "status"} {
		if !seen[k] {
			return r, fmt.Errorf("WRKRESULT lacks %s: %q", k, line)
		}
	}
	return r, nil
}

// wrkThreads mirrors pgbench's -j 2: two threads when the connections
// split evenly over them (wrk gives each thread conns/threads).
func wrkThreads(conns int) int {
	if conns >= 2 && conns%2 == 0 {
		return 2
	}
	return 1
}

// wrkLoad is one wrk run.
type wrkLoad struct {
	Name     string // script file stem
	Script   string // Lua source
	BaseURL  string // scheme://host:port
	Conns    int
	Duration time.Duration // whole seconds
	// Metrics is consensusd's /metrics URL; empty for the static server,
	// whose answers are judged by wrk's own count of statuses ≥ 400.
	Metrics string
	Expect  expectation
}

// wrkRun is a load's figures plus what the accounting noticed.
type wrkRun struct {
	F       figures
	Res     wrkResult
	Counted int64 // answers in the /metrics delta (consensusd only)
	// Abandoned: answers with a status ≥ 400 that wrk never received,
	// left out of Unexpected (see excuseAbandoned).
	Abandoned int64
}

// runWrk runs wrk as a child process. The server's and PostgreSQL's CPU
// are read as runAttack reads them; the client's is wrk's own (rusage of
// the child). Statuses come from /metrics when l.Metrics is set.
func runWrk(ctx context.Context, bin, dir string, w cpuWatch, l wrkLoad) (wrkRun, error) {
	var run wrkRun
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return run, err
	}
	script := filepath.Join(dir, l.Name+".lua")
	if err := os.WriteFile(script, []byte(l.Script), 0o600); err != nil {
		return run, err
	}
	threads := wrkThreads(l.Conns)
	args := []string{"-t", strconv.Itoa(threads), "-c", strconv.Itoa(l.Conns),
		"-d", strconv.Itoa(int(l.Duration/time.Second)) + "s", "--timeout", "60s", "-s", script, l.BaseURL}
	var before reqCounts
	if l.Metrics != "" {
		var err error
		if before, err = scrapeRequests(ctx, l.Metrics); err != nil {
			return run, err
		}
	}
	startRSS, err := w.rssStart()
	if err != nil {
		return run, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	mark := w.mark()
	out, err := cmd.CombinedOutput()
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return run, cerr
		}
		return run, fmt.Errorf("wrk %s: %w\n%s", l.Name, err, out)
	}
	var now reqCounts
	if l.Metrics != "" {
		// Before the CPU mark: the server's work on the requests wrk left
		// in flight is counted with their answers.
		if now, err = scrapeIdle(ctx, l.Metrics); err != nil {
			return run, err
		}
	}
	after := w.mark()
	res, err := parseWrkResult(string(out))
	if err != nil {
		return run, fmt.Errorf("wrk %s: %w\n%s", l.Name, err, out)
	}
	f := figures{Unexpected: res.socketErrors()}
	sockets := int64(f.unexpectedTotal())
	if l.Metrics != "" {
		d := now.delta(before)
		ok, unexpected := d.split(l.Expect)
		run.Counted = d.total()
		run.Abandoned = abandoned(unexpected)
		for k, v := range unexpected {
			f.Unexpected[k] += v
		}
		f.OK = int(ok)
		f.Requests = int(run.Counted - run.Abandoned + sockets)
	} else {
		f.OK = int(res.Requests - res.Status)
		f.Requests = int(res.Requests + sockets)
		if res.Status > 0 {
			f.Unexpected["status ≥ 400 (wrk)"] = int(res.Status)
		}
	}
	f.Elapsed = res.Duration
	f.ReqPerSec = okRate(res, f.OK, run.Counted-run.Abandoned, l.Metrics != "")
	// wrk keeps every latency it receives; the answers to the requests it
	// cut off at the end (counted by /metrics) have none.
	f.P50, f.P99, f.Samples = res.P50, res.P99, int(res.Requests)
	f.ServerCPU, f.PGCPU = after.server-mark.server, after.pg-mark.pg
	f.ClientCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	w.rssEnd(&f, startRSS)
	run.F, run.Res = f, res
	return run, nil
}

// abandoned removes from unexpected (in place) the answers the service
// recorded as 499, and returns how many: when its time is up wrk closes its
// connections with requests still in flight, and the service records those
// as closed by the client (its database calls were cancelled). No client
// received them.
func abandoned(unexpected map[string]int) int64 {
	var n int64
	for k, v := range unexpected {
		if strings.HasPrefix(k, "499 ") {
			n += int64(v)
			delete(unexpected, k)
		}
	}
	return n
}

// unexpectedTotal counts the answers and errors in Unexpected (here, before
// any status is added: wrk's socket errors).
func (f figures) unexpectedTotal() int {
	n := 0
	for _, v := range f.Unexpected {
		n += v
	}
	return n
}

// okRate is expected answers per second of wrk's window. wrk counts the
// answers completed within its window; /metrics also counts those to the
// requests still in flight when wrk stopped (at most one per connection),
// so the rate is wrk's count times the share of expected answers.
func okRate(res wrkResult, ok int, counted int64, fromMetrics bool) float64 {
	if res.Duration <= 0 {
		return 0
	}
	n := float64(ok)
	if fromMetrics && counted > 0 {
		n = float64(res.Requests) * float64(ok) / float64(counted)
	}
	return n / res.Duration.Seconds()
}
