package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
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
	static *staticServer
	world  *world
	http   *http.Client
	logDir string

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

func run(ctx context.Context, cfg config) (err error) {
	began := time.Now()
	b := &bench{
		cfg:       cfg,
		http:      &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		world:     &world{byInv: map[string]*participant{}, runID: randomText(4)},
		roomBytes: map[int]int{},
		setupTime: map[string]time.Duration{},
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

	cfg.logf("== starting consensusd")
	if b.svc, err = startService(ctx, cfg, bin, b.cl); err != nil {
		return err
	}
	defer b.svc.stop()
	b.pprofOK, b.pprofNote = b.probePProf(ctx)
	cfg.logf("   %s", b.pprofNote)

	if err := b.setup(ctx); err != nil {
		return err
	}
	if b.static, err = startStatic(filepath.Join(cfg.WorkDir, "static")); err != nil {
		return err
	}
	defer b.static.stop()

	steps := []func(context.Context) error{b.warmup, b.readRounds, b.notModifiedRounds, b.flatRounds, b.appendRounds}
	for _, step := range steps {
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
	if err := os.WriteFile(cfg.Out, []byte(report.markdown), 0o644); err != nil {
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

// setup makes the agreements, reads the invitations, exchanges and claims
// every participant (measured), fills the rooms and captures the read rooms.
func (b *bench) setup(ctx context.Context) error {
	cfg := b.cfg
	cfg.logf("== creating %d agreements × %d participants through the operator API", cfg.Agreements, cfg.Parts)
	t := time.Now()
	if err := b.createAgreements(ctx); err != nil {
		return err
	}
	b.setupTime["create agreements (operator API)"] = time.Since(t)
	t = time.Now()
	if err := b.readInvitations(ctx); err != nil {
		return err
	}
	b.setupTime[fmt.Sprintf("deliver %d invitation emails (Maildir)", len(b.world.byInv))] = time.Since(t)
	cfg.logf("   %d invitation emails read from %s", len(b.world.byInv), b.svc.mailDir)

	cfg.logf("== exchange and claim every participant (measured)")
	prof := b.startProfiles(ctx, pathExchange, int(cfg.Duration/time.Second))
	f, err := b.exchangeAll(ctx)
	if err != nil {
		return err
	}
	if err := prof.wait(); err != nil {
		b.note("profile of exchange failed: %v", err)
	}
	b.record(measurement{Path: pathExchange, Side: sideService, Round: 1, F: f})
	prof = b.startProfiles(ctx, pathClaim, int(cfg.Duration/time.Second))
	if f, err = b.claimAll(ctx); err != nil {
		return err
	}
	if err := prof.wait(); err != nil {
		b.note("profile of claim failed: %v", err)
	}
	b.record(measurement{Path: pathClaim, Side: sideService, Round: 1, F: f})

	ags := b.world.ags
	for i, a := range ags {
		switch i {
		case 0:
			a.target, a.readSize = cfg.Sizes[2], cfg.Sizes[2]
		case 1:
			a.target, a.readSize = cfg.Sizes[1], cfg.Sizes[1]
		case 2:
			a.target, a.readSize = cfg.Sizes[0], cfg.Sizes[0]
		default:
			a.target = cfg.Sizes[0]
		}
	}
	total := 0
	for _, a := range ags {
		total += a.target
	}
	cfg.logf("== filling the rooms: %d events (one room of %d, one of %d, the others %d)", total, cfg.Sizes[2], cfg.Sizes[1], cfg.Sizes[0])
	if f, err = b.fill(ctx); err != nil {
		return err
	}
	b.record(measurement{Path: pathFill, Side: sideService, Round: 1, F: f, RoomFrom: 0, RoomTo: total})

	cfg.logf("== baseline tables (%s) and scripts", baselineDB)
	if b.appendSQL, b.lookupSQL, err = setupBaseline(ctx, b.cl, cfg, b.logDir, total); err != nil {
		return err
	}

	cfg.logf("== checking room sizes and collecting ETags")
	for _, a := range ags {
		body, header, n, err := b.roomState(ctx, a.parts[0])
		if err != nil {
			return fmt.Errorf("room of agreement %d: %w", a.index+1, err)
		}
		if n != a.target || int(a.stored.Load()) != a.target {
			return fmt.Errorf("room of agreement %d holds %d events (%d stored by the bench), want %d", a.index+1, n, a.stored.Load(), a.target)
		}
		if a.readSize == 0 {
			continue
		}
		b.roomBytes[a.readSize] = len(body)
		if err := saveStaticRoom(filepath.Join(cfg.WorkDir, "static"), a.readSize, header, body); err != nil {
			return err
		}
		for _, p := range a.parts {
			_, h, _, err := b.roomState(ctx, p)
			if err != nil {
				return err
			}
			if p.etag = h.Get("ETag"); p.etag == "" {
				return errors.New("the room answer has no ETag: the 304 path cannot be measured")
			}
		}
	}
	return nil
}

func (b *bench) readRoom(size int) *agreement {
	for _, a := range b.world.ags {
		if a.readSize == size {
			return a
		}
	}
	panic("no room of size " + fmt.Sprint(size))
}

// readTargeter reads a random participant's room; with etags, conditionally.
func readTargeter(a *agreement, conditional bool) vegeta.Targeter {
	ts := make([]vegeta.Target, len(a.parts))
	for i, p := range a.parts {
		h := http.Header{"Authorization": p.auth["Authorization"]}
		if conditional {
			h.Set("If-None-Match", p.etag)
		}
		ts[i] = vegeta.Target{Method: http.MethodGet, URL: p.roomURL, Header: h}
	}
	return func(t *vegeta.Target) error {
		*t = ts[rand.IntN(len(ts))]
		return nil
	}
}

// staticTargeter sends the same request shape (a participant's credential
// header) to the baseline server.
func (b *bench) staticTargeter(a *agreement, size int) vegeta.Targeter {
	ts := make([]vegeta.Target, len(a.parts))
	for i, p := range a.parts {
		ts[i] = vegeta.Target{Method: http.MethodGet, URL: b.static.url(size), Header: http.Header{"Authorization": p.auth["Authorization"]}}
	}
	return func(t *vegeta.Target) error {
		*t = ts[rand.IntN(len(ts))]
		return nil
	}
}

func (b *bench) pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(b.cfg.Pause):
	}
}

// sides orders A and B for round r: A/B in odd rounds, B/A in even ones, so
// a slow drift of the machine does not favour one side.
func sides(r int) []string {
	if r%2 == 1 {
		return []string{sideService, sideBaseline}
	}
	return []string{sideBaseline, sideService}
}

// warmup runs each service read path briefly, unrecorded.
func (b *bench) warmup(ctx context.Context) error {
	if b.cfg.Warmup <= 0 {
		return nil
	}
	b.cfg.logf("== warm-up (%s per path, not recorded)", b.cfg.Warmup)
	for _, size := range b.cfg.Sizes {
		a := b.readRoom(size)
		for _, cond := range []bool{false, true} {
			if _, err := runAttack(ctx, b.serviceWatch(), attack{Targeter: readTargeter(a, cond), Conns: b.cfg.Conns, Duration: b.cfg.Warmup}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *bench) readRounds(ctx context.Context) error {
	cfg := b.cfg
	cfg.logf("== full room read vs the same bytes from memory (%d connections)", cfg.Conns)
	for r := 1; r <= cfg.Rounds; r++ {
		for _, size := range cfg.Sizes {
			a := b.readRoom(size)
			for _, side := range sides(r) {
				b.pause(ctx)
				var f figures
				var err error
				if side == sideService {
					f, err = runAttack(ctx, b.serviceWatch(), attack{Targeter: readTargeter(a, false), Conns: cfg.Conns, Duration: cfg.Duration, Expect: http.StatusOK})
				} else {
					f, err = runAttack(ctx, b.staticWatch(), attack{Targeter: b.staticTargeter(a, size), Conns: cfg.Conns, Duration: cfg.Duration, Expect: http.StatusOK})
				}
				if err != nil {
					return err
				}
				b.record(measurement{Path: pathRead, Size: size, Side: side, Round: r, F: f})
			}
		}
	}
	for _, size := range cfg.Sizes {
		b.profilePass(ctx, fmt.Sprintf("read-%d", size), attack{Targeter: readTargeter(b.readRoom(size), false), Conns: cfg.Conns, Expect: http.StatusOK})
	}
	return nil
}

func (b *bench) lookupBaseline(ctx context.Context, r int) error {
	f, err := runPgbench(ctx, b.cl, b.logDir, pgbenchRun{
		Name: fmt.Sprintf("lookup-r%d", r), Script: b.lookupSQL, Conns: b.cfg.Conns, Duration: b.cfg.Duration,
		Vars: map[string]string{"tokens": fmt.Sprint(b.cfg.Agreements * b.cfg.Parts)},
	})
	if err != nil {
		return err
	}
	b.record(measurement{Path: path304, Side: sideBaseline, Round: r, F: f})
	return nil
}

// notModifiedRounds: GET room with the current ETag at each size vs
// pgbench's one indexed lookup (once a round: it does not depend on size).
func (b *bench) notModifiedRounds(ctx context.Context) error {
	cfg := b.cfg
	cfg.logf("== 304 (If-None-Match) vs pgbench, one indexed lookup (-M prepared, %d clients)", cfg.Conns)
	for r := 1; r <= cfg.Rounds; r++ {
		for _, side := range sides(r) {
			if side == sideBaseline {
				b.pause(ctx)
				if err := b.lookupBaseline(ctx, r); err != nil {
					return err
				}
				continue
			}
			for _, size := range cfg.Sizes {
				b.pause(ctx)
				f, err := runAttack(ctx, b.serviceWatch(), attack{Targeter: readTargeter(b.readRoom(size), true), Conns: cfg.Conns, Duration: cfg.Duration, Expect: http.StatusNotModified})
				if err != nil {
					return err
				}
				b.record(measurement{Path: path304, Size: size, Side: sideService, Round: r, F: f})
			}
		}
	}
	for _, size := range cfg.Sizes {
		b.profilePass(ctx, fmt.Sprintf("304-%d", size), attack{Targeter: readTargeter(b.readRoom(size), true), Conns: cfg.Conns, Expect: http.StatusNotModified})
	}
	return nil
}

// flatRounds: a fixed number of appends into a fresh small room, then into
// the large room, same connections; the ratio of their rates says whether
// an append's cost grows with the room's history. A count, not a duration,
// bounds how much the small room grows while it is measured.
func (b *bench) flatRounds(ctx context.Context) error {
	cfg := b.cfg
	large := b.world.ags[0]
	cfg.logf("== append cost by room size: %d appends, %d connections, into a room of %d vs the room of %d", cfg.FlatN, cfg.FlatConns, cfg.Sizes[0], large.stored.Load())
	for r := 1; r <= cfg.FlatRounds; r++ {
		small := b.world.ags[2+r]
		for _, side := range sides(r) {
			room, label := small, sideSmall
			if side == sideBaseline {
				room, label = large, sideLarge // the large room is the small one's reference
			}
			if err := b.cl.checkpoint(ctx); err != nil {
				return err
			}
			b.pause(ctx)
			pk := &picker{w: b.world, ags: []*agreement{room}}
			from := int(room.stored.Load())
			f, err := runAttack(ctx, b.serviceWatch(), attack{Targeter: pk.countTargeter(cfg.FlatN), Conns: cfg.FlatConns, Expect: http.StatusCreated, OnResult: b.world.countStored})
			if err != nil {
				return err
			}
			if pk.exhausted {
				b.note("flatness round %d: the room of agreement %d ran out of event slots", r, room.index+1)
			}
			b.record(measurement{Path: pathFlat, Size: from, Side: label, Round: r, F: f, RoomFrom: from, RoomTo: int(room.stored.Load())})
		}
	}
	return nil
}

func (b *bench) storedTotal() int {
	n := 0
	for _, a := range b.world.ags {
		n += int(a.stored.Load())
	}
	return n
}

// appendRounds: comments spread over every room (a random room per
// request, rotating participants) vs pgbench's minimal append transaction
// with the same rooms and clients. A checkpoint before each side keeps one
// side from paying for the other's dirty buffers.
func (b *bench) appendRounds(ctx context.Context) error {
	cfg := b.cfg
	cfg.logf("== event append vs pgbench's minimal append (%d connections, %d agreements)", cfg.Conns, cfg.Agreements)
	pk := &picker{w: b.world, ags: b.world.ags}
	for r := 1; r <= cfg.Rounds; r++ {
		for _, side := range sides(r) {
			if err := b.cl.checkpoint(ctx); err != nil {
				return err
			}
			b.pause(ctx)
			if side == sideBaseline {
				f, err := runPgbench(ctx, b.cl, b.logDir, pgbenchRun{
					Name: fmt.Sprintf("append-r%d", r), Script: b.appendSQL, Conns: cfg.Conns, Duration: cfg.Duration,
					Vars: map[string]string{"agreements": fmt.Sprint(cfg.Agreements), "participants": fmt.Sprint(cfg.Parts)},
				})
				if err != nil {
					return err
				}
				b.record(measurement{Path: pathAppend, Side: side, Round: r, F: f})
				continue
			}
			from := b.storedTotal()
			f, err := runAttack(ctx, b.serviceWatch(), attack{Targeter: pk.randomTargeter(), Conns: cfg.Conns, Duration: cfg.Duration, Expect: http.StatusCreated, OnResult: b.world.countStored})
			if err != nil {
				return err
			}
			if pk.exhausted {
				b.note("append round %d stopped early: every participant has posted %d events on the revision (SPEC §4 limit); shorten -duration", r, eventLimit)
			}
			b.record(measurement{Path: pathAppend, Side: side, Round: r, F: f, RoomFrom: from, RoomTo: b.storedTotal()})
		}
	}
	if err := b.cl.checkpoint(ctx); err != nil {
		return err
	}
	b.profilePass(ctx, "append", attack{Targeter: pk.randomTargeter(), Conns: cfg.Conns, Expect: http.StatusCreated, OnResult: b.world.countStored})
	return nil
}

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}
