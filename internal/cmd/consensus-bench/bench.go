package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

const (
	sideService  = "service"
	sideBaseline = "baseline"
	// append-flat compares the service with itself: a small room and a large one.
	sideSmall = "small room"
	sideLarge = "large room"
)

// Paths, as named in the results.
const (
	pathExchange = "exchange"
	pathClaim    = "claim"
	pathFill     = "fill"
	pathAppend   = "append"
	pathRead     = "read"
	path304      = "304"
	pathFlat     = "append-flat"
)

type measurement struct {
	Path     string
	Size     int // room size in events (read, 304, append-flat)
	Side     string
	Round    int
	F        figures
	RoomFrom int // events in the room(s) before and after (appends)
	RoomTo   int
}

type bench struct {
	cfg    config
	cl     *cluster
	svc    *service
	static *baselineProcess
	lookup *baselineProcess
	// listeners is the listener phase's result; exhausted, the requests of
	// the last append load that found their thread's participants used up.
	listeners *listenerResult
	// parkedOff is the listener phase's again, with the parked
	// connections off (parkedoff.go); bin is consensusd's binary.
	parkedOff *listenerResult
	bin       string
	exhausted int64
	world     *world
	http      *http.Client
	logDir    string
	wrk       string // wrk's path

	// wrk's count of answers vs the /metrics delta, over every service load
	wrkChecks              int
	wrkDiffMin, wrkDiffMax int64
	wrkAbandoned           int64 // requests wrk cut off at its end (499 in /metrics)

	appendSQL, lookupSQL string

	pprofOK      bool
	pprofNote    string
	mu           sync.Mutex
	profileFiles []string

	notes     []string
	ms        []measurement
	meta      meta
	roomBytes map[int]int // response bytes of a full read, per room size
	setupTime map[string]time.Duration
	svcStart  time.Duration // consensusd's first start, to /api/health 200
	witness   *benchWitness // the log's one witness
	logRes    *logResult    // the log step
	scale     *scaleRun     // the scale phase, when cfg.Scale
}

func (b *bench) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.notes = append(b.notes, msg)
	b.cfg.logf("   note: %s", msg)
}

func (b *bench) serviceWatch() cpuWatch {
	return cpuWatch{serverPID: b.svc.pid, rssPID: b.svc.pid, cl: b.cl}
}

func (b *bench) staticWatch() cpuWatch {
	return cpuWatch{serverPID: b.static.cmd.Process.Pid, cl: b.cl}
}

func (b *bench) record(m measurement) {
	b.ms = append(b.ms, m)
	label := m.Path
	if m.Size > 0 {
		label = fmt.Sprintf("%s@%d", m.Path, m.Size)
	}
	extra := ""
	if m.F.errors() > 0 {
		extra = "  UNEXPECTED: " + m.F.errorText()
	}
	b.cfg.logf("   %-16s %-8s r%d  %9.1f/s  p50 %-9s p99 %-9s%s", label, m.Side, m.Round, m.F.ReqPerSec, fmtDur(m.F.P50), fmtDur(m.F.P99), extra)
}

// stepNames names run's steps, in their order, for -only.
var stepNames = []string{"warmup", "read", "304", "flat", "append", "busy", "long", "listen", "listen-off", "log"}

func run(ctx context.Context, cfg config) (err error) {
	began := time.Now()
	b := &bench{
		cfg:        cfg,
		http:       &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		world:      &world{byInv: map[string]*participant{}, runID: randomText(4)},
		roomBytes:  map[int]int{},
		setupTime:  map[string]time.Duration{},
		wrkDiffMin: math.MaxInt64, wrkDiffMax: math.MinInt64,
	}
	// Before the long set-up: without wrk nothing can be measured.
	if b.wrk, err = findWrk(); err != nil {
		return err
	}
	if err := findWitnessTools(); err != nil {
		return err
	}
	for _, d := range []string{cfg.WorkDir, filepath.Join(cfg.WorkDir, "bin"), filepath.Join(cfg.WorkDir, "static"), filepath.Join(cfg.WorkDir, "pgbench"), filepath.Dir(cfg.Out)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// .data is private (secrets, mail); the work directory inherits that.
	_ = os.Chmod(filepath.Dir(cfg.WorkDir), 0o711)
	_ = os.Chmod(cfg.WorkDir, 0o700)
	b.logDir = filepath.Join(cfg.WorkDir, "pgbench")
	b.meta = collectMeta(cfg)

	cfg.logf("== consensus-bench: %d agreements × %d participants, rooms of %d/%d/%d events, %s per measurement, %d rounds", cfg.Agreements, cfg.Parts, cfg.Sizes[0], cfg.Sizes[1], cfg.Sizes[2], cfg.Duration, cfg.Rounds)
	cfg.logf("== building consensusd")
	bin, buildDur, err := buildService(ctx, cfg)
	if err != nil {
		return err
	}
	b.setupTime["build consensusd"] = buildDur
	b.bin = bin

	cfg.logf("== starting the private PostgreSQL in %s (fsync on)", cfg.PGDir)
	t := time.Now()
	if b.cl, err = startCluster(ctx, cfg); err != nil {
		return err
	}
	defer b.cl.stop(cfg)
	b.setupTime["start PostgreSQL, recreate databases"] = time.Since(t)
	for k, v := range b.cl.info {
		b.meta.pg[k] = v
	}

	cfg.logf("== starting the log's witness (litewitness) and consensusd")
	if b.witness, err = startWitness(ctx, cfg); err != nil {
		return err
	}
	defer b.witness.stop()
	lg, err := newBenchLog(b.witness)
	if err != nil {
		return err
	}
	if err := b.witness.addLog(ctx, benchLogOrigin, lg.vkey); err != nil {
		return err
	}
	t = time.Now()
	if b.svc, err = startService(ctx, cfg, bin, b.cl, nil, lg); err != nil {
		return err
	}
	b.svcStart = time.Since(t)
	// b.svc, not the service of this moment: the scale phase restarts it.
	defer func() { b.svc.stop() }()
	if cfg.Scale {
		if err := b.scalePhase(ctx, bin); err != nil {
			return err
		}
	}
	b.pprofOK, b.pprofNote = b.probePProf(ctx)
	cfg.logf("   %s", b.pprofNote)

	if err := b.setup(ctx); err != nil {
		return err
	}
	if b.static, err = startStatic(filepath.Join(cfg.WorkDir, "static")); err != nil {
		return err
	}
	defer b.static.stop()

	if err := b.setupExtra(ctx); err != nil {
		return err
	}
	if b.lookup, err = startLookup(b.cl.url(baselineDB)); err != nil {
		return err
	}
	defer b.lookup.stop()

	// log last: its integration step writes thousands of rooms into the
	// service's tables, which the loads before it should not meet.
	steps := []func(context.Context) error{b.warmup, b.readRounds, b.notModifiedRounds, b.flatRounds, b.appendRounds, b.busyRounds, b.longAppend, b.listenerPhase, b.listenersOff, b.logPhase}
	for i, step := range steps {
		if len(cfg.Only) > 0 && !slices.Contains(cfg.Only, stepNames[i]) {
			continue
		}
		if err := step(ctx); err != nil {
			return err
		}
		if err := b.svc.alive(); err != nil {
			return err
		}
	}
	b.meta.finished = time.Now()
	b.meta.elapsed = time.Since(began)
	b.meta.loadAfter = loadAvg()

	report := b.report()
	// A run on the small database rewrites the file and carries over the
	// last scale run's section; a scale run rewrites only that section.
	old, err := os.ReadFile(cfg.Out)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	text := report.markdown
	if cfg.Scale {
		if b.scale.sizeEnd, err = b.cl.databaseSize(ctx); err != nil {
			return err
		}
		small := string(old)
		if i := strings.Index(small, scaleHeading); i >= 0 {
			small = small[:i]
		}
		section := b.scaleSection(small, report)
		if len(old) == 0 {
			old = []byte("# Benchmark results\n\nNo run on the small database yet: `make bench` writes it.\n")
		}
		text = withScaleSection(string(old), section)
		report.ratioTable += "\nAt scale ÷ small database:\n\n" + scaleComparison(parseRatioTable(small), parseRatioTable(report.ratioTable))
	} else if kept := keptScaleSection(string(old)); kept != "" && len(cfg.Only) == 0 {
		text = strings.TrimRight(text, "\n") + "\n\n" + kept
	}
	if err := os.WriteFile(cfg.Out, []byte(text), 0o644); err != nil {
		return err
	}
	cfg.logf("")
	cfg.logf("results: %s (%s in all)", cfg.Out, b.meta.elapsed.Round(time.Second))
	cfg.logf("")
	fmt.Fprint(cfg.Stdout, report.ratioTable)
	if n := b.unexpected(); n > 0 {
		return fmt.Errorf("%d measurements had unexpected answers (see %s): their figures are not trustworthy", n, cfg.Out)
	}
	return nil
}

func (b *bench) unexpected() int {
	n := 0
	for _, m := range b.ms {
		if m.F.errors() > 0 {
			n++
		}
	}
	return n
}
