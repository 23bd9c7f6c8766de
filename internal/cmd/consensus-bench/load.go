package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// figures is one measurement: one side of one path in one round.
type figures struct {
	Requests   int
	OK         int            // answers with the expected status
	Unexpected map[string]int // other statuses or transport errors, with counts
	ReqPerSec  float64        // OK answers per second of the measurement
	P50, P99   time.Duration
	Elapsed    time.Duration
	ServerCPU  time.Duration // consensusd or the static server; zero for pgbench
	PGCPU      time.Duration // the whole PostgreSQL cluster
	ClientCPU  time.Duration // the load generator: wrk, vegeta (this process) or pgbench
	PeakRSSKiB int64         // consensusd's VmHWM during the load (service side only)
	StartRSS   int64         // consensusd's VmRSS when the load began (what earlier loads left)
	Load1      string        // the machine's 1-minute load average right after
	Samples    int           // latencies behind P50/P99 (pgbench logs a sample)
}

func (f figures) errors() int { return f.Requests - f.OK }

// cost is the CPU time the server side (the server process and the whole
// PostgreSQL cluster, not the load generator) spent per expected answer.
func (f figures) cost() time.Duration { return f.perRequest(f.ServerCPU + f.PGCPU) }

func (f figures) perRequest(d time.Duration) time.Duration {
	if f.OK == 0 {
		return 0
	}
	return d / time.Duration(f.OK)
}

func (f figures) errorText() string {
	if len(f.Unexpected) == 0 {
		return ""
	}
	keys := make([]string, 0, len(f.Unexpected))
	for k := range f.Unexpected {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d× %s", f.Unexpected[k], k))
	}
	return strings.Join(parts, ", ")
}

// attack describes one vegeta run (the count-bounded loads: exchange,
// claim, fill, flatness; wrk.go runs the others). Rate is unlimited: Conns
// workers each send a request as soon as the previous answer arrived (a
// closed loop, as pgbench's clients).
type attack struct {
	Targeter vegeta.Targeter
	Conns    int
	Bodies   bool // keep response bodies for OnResult
	Expect   int  // the status that counts as success
	OnResult func(*vegeta.Result)
}

// cpuWatch holds the processes whose CPU time a measurement reports.
type cpuWatch struct {
	serverPID int // consensusd or the static server; 0 for none
	rssPID    int // consensusd when its peak RSS is wanted
	cl        *cluster
}

type cpuMark struct {
	server, pg, self time.Duration
}

// rssStart resets the watched process's peak RSS, so the next rssEnd
// covers one load only, and returns its RSS now (0 when none is watched).
func (w cpuWatch) rssStart() (int64, error) {
	if w.rssPID == 0 {
		return 0, nil
	}
	if err := resetPeakRSS(w.rssPID); err != nil {
		return 0, fmt.Errorf("reset peak RSS: %w", err)
	}
	rss, _ := readRSS(w.rssPID)
	return rss, nil
}

// rssEnd records in f the watched process's peak RSS since rssStart, its
// RSS then, and the load average.
func (w cpuWatch) rssEnd(f *figures, startRSS int64) {
	if w.rssPID != 0 {
		f.PeakRSSKiB, _ = readPeakRSS(w.rssPID)
		f.StartRSS = startRSS
	}
	f.Load1 = load1()
}

func (w cpuWatch) mark() cpuMark {
	m := cpuMark{pg: w.cl.cpu(), self: selfCPU()}
	if w.serverPID != 0 {
		m.server = procCPU(w.serverPID)
	}
	return m
}

func runAttack(ctx context.Context, w cpuWatch, a attack) (figures, error) {
	opts := []func(*vegeta.Attacker){
		vegeta.Workers(uint64(a.Conns)), vegeta.MaxWorkers(uint64(a.Conns)),
		vegeta.Connections(a.Conns), vegeta.MaxConnections(a.Conns),
		vegeta.KeepAlive(true), vegeta.Timeout(60 * time.Second), vegeta.Redirects(vegeta.NoFollow),
	}
	if !a.Bodies {
		// Bodies are still read to the end (the connection is reused), not kept.
		opts = append(opts, vegeta.MaxBody(0))
	}
	atk := vegeta.NewAttacker(opts...)
	startRSS, err := w.rssStart()
	if err != nil {
		return figures{}, err
	}
	before := w.mark()
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stop()

	var m vegeta.Metrics
	f := figures{Unexpected: map[string]int{}}
	noTargets := vegeta.ErrNoTargets.Error()
	for res := range atk.Attack(a.Targeter, vegeta.Rate{Freq: 0, Per: time.Second}, 0, "") {
		if res.Code == 0 && res.Error == noTargets {
			continue // the worker that found the list empty sent nothing
		}
		m.Add(res)
		f.Requests++
		switch {
		case int(res.Code) == a.Expect:
			f.OK++
		case res.Code == 0:
			f.Unexpected["error: "+res.Error]++
		default:
			f.Unexpected[strconv.Itoa(int(res.Code))]++
		}
		if a.OnResult != nil {
			a.OnResult(res)
		}
	}
	after := w.mark()
	m.Close()
	if err := ctx.Err(); err != nil {
		return f, err
	}
	f.Elapsed = m.Duration + m.Wait
	if f.Elapsed > 0 {
		f.ReqPerSec = float64(f.OK) / f.Elapsed.Seconds()
	}
	f.P50, f.P99, f.Samples = m.Latencies.P50, m.Latencies.P99, f.Requests
	f.ServerCPU, f.PGCPU, f.ClientCPU = after.server-before.server, after.pg-before.pg, after.self-before.self
	w.rssEnd(&f, startRSS)
	return f, nil
}

// listTargeter hands out ts once each, then ErrNoTargets.
func listTargeter(ts []vegeta.Target) vegeta.Targeter {
	var next atomic.Int64
	return func(t *vegeta.Target) error {
		i := next.Add(1) - 1
		if i >= int64(len(ts)) {
			return vegeta.ErrNoTargets
		}
		*t = ts[i]
		return nil
	}
}

// pgbenchRun is one pgbench measurement.
type pgbenchRun struct {
	Name     string // file name stem for the logs
	Script   string
	Vars     map[string]string
	Conns    int
	Duration time.Duration
}

var (
	tpsRE    = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \(without initial connection time\)`)
	doneRE   = regexp.MustCompile(`(?m)^number of transactions actually processed: ([0-9]+)`)
	failedRE = regexp.MustCompile(`(?m)^number of failed transactions: ([0-9]+)`)
)

// pgbenchSampling is the share of transactions pgbench logs, for p50/p99;
// logging all of them would slow the baseline down.
const pgbenchSampling = 0.1

func runPgbench(ctx context.Context, cl *cluster, logDir string, r pgbenchRun) (figures, error) {
	prefix := filepath.Join(logDir, r.Name)
	old, _ := filepath.Glob(prefix + ".*")
	for _, p := range old {
		os.Remove(p)
	}
	threads := min(2, r.Conns)
	args := []string{
		"-n", "-c", strconv.Itoa(r.Conns), "-j", strconv.Itoa(threads),
		"-T", strconv.Itoa(int(r.Duration / time.Second)), "-M", "prepared",
		"-f", r.Script, "--log", "--sampling-rate", strconv.FormatFloat(pgbenchSampling, 'f', -1, 64),
		"--log-prefix", prefix, "-h", cl.socket, "-U", cl.user,
	}
	keys := make([]string, 0, len(r.Vars))
	for k := range r.Vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-D", k+"="+r.Vars[k])
	}
	args = append(args, baselineDB)
	cmd := exec.CommandContext(ctx, cl.pgbench, args...)
	cmd.Dir = logDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	w := cpuWatch{cl: cl}
	before := w.mark()
	out, err := cmd.CombinedOutput()
	after := w.mark()
	if err != nil {
		return figures{}, fmt.Errorf("pgbench %s: %w\n%s", r.Name, err, out)
	}
	f := figures{Unexpected: map[string]int{}}
	text := string(out)
	tps := tpsRE.FindStringSubmatch(text)
	done := doneRE.FindStringSubmatch(text)
	if done != nil && done[1] == "0" {
		// A short run on a saturated machine can finish no transaction at
		// all; pgbench then prints no tps line. That is a figure (0/s) for
		// the report, not a broken tool.
		f.Elapsed = r.Duration
		return f, nil
	}
	if tps == nil || done == nil {
		return f, fmt.Errorf("pgbench %s: no tps in its output:\n%s", r.Name, text)
	}
	f.ReqPerSec, _ = strconv.ParseFloat(tps[1], 64)
	f.OK, _ = strconv.Atoi(done[1])
	f.Requests = f.OK
	if m := failedRE.FindStringSubmatch(text); m != nil {
		if n, _ := strconv.Atoi(m[1]); n > 0 {
			f.Unexpected["failed transactions"] = n
			f.Requests += n
		}
	}
	f.Elapsed = r.Duration
	f.PGCPU = after.pg - before.pg
	f.ClientCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	lat, err := pgbenchLatencies(prefix)
	if err != nil {
		return f, fmt.Errorf("pgbench %s logs: %w", r.Name, err)
	}
	f.Samples = len(lat)
	f.Load1 = load1()
	f.P50, f.P99 = quantile(lat, 0.5), quantile(lat, 0.99)
	return f, nil
}

// pgbenchLatencies reads the per-transaction logs (one file per thread):
// "client_id transaction_no time script_no time_epoch time_us ...", time in µs.
func pgbenchLatencies(prefix string) ([]time.Duration, error) {
	files, err := filepath.Glob(prefix + ".*")
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no log files %s.*", prefix)
	}
	var lat []time.Duration
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 3 {
				continue
			}
			us, err := strconv.ParseInt(fields[2], 10, 64)
			if err != nil {
				continue
			}
			lat = append(lat, time.Duration(us)*time.Microsecond)
		}
		f.Close()
		os.Remove(name)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, nil
}

// quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
