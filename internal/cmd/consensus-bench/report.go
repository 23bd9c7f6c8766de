package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// Targets of the performance contract: SPEC's floors, raised where the
// scale work set higher ones (append ≥ 0.8 by rate and CPU cost, the
// 300-event read ≥ 0.7); the 304 against pgbench keeps SPEC's floor.
const (
	targetAppend       = 0.8 // by rate and by CPU cost
	targetRead         = 0.7 // full read of the 300-event room (the middle size)
	target304          = 0.3
	target304Go        = 1.0 // vs a minimal Go server doing one lookup per request
	targetBusy         = 2.0 // one room vs pgbench on one row
	targetListenRSSMiB = 256.0
	targetWakeP99      = 250 * time.Millisecond
	targetListenAppend = 0.9 // append ratio with listeners ÷ without
	targetRSSMiB       = 64.0
	targetFlatness     = 0.8 // cost at the large room within 25% of the small room's
)

type report struct {
	markdown   string
	ratioTable string
}

func (b *bench) report() report {
	cfg := b.cfg
	s := cfg.Sizes
	var rt strings.Builder
	rt.WriteString("| check | service | baseline | ratio: median (min–max over rounds) | CPU-cost ratio | target | met |\n")
	rt.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	row := func(cells ...string) { rt.WriteString("| " + strings.Join(cells, " | ") + " |\n") }
	// A partial run (-only) leaves out the comparisons it did not measure.
	ran := func(p pairStats) bool { return len(cfg.Only) == 0 || p.a.med > 0 || p.b.med > 0 }

	ap := pair(b.sel(pathAppend, sideService, 0), b.sel(pathAppend, sideBaseline, 0))
	if ran(ap) {
		row(fmt.Sprintf("event append, %d conns over %d rooms", cfg.Conns, cfg.Agreements), ap.a.rate()+" events/s", ap.b.rate()+" tps (pgbench minimal append)", ap.ratio.ratio(), ap.cost.ratio(), fmt.Sprintf("≥ %.1f", targetAppend), bothVerdict(ap, targetAppend))
	}
	for i, size := range s {
		p := pair(b.sel(pathRead, sideService, size), b.sel(pathRead, sideBaseline, size))
		target, met := "(no target)", "—"
		if i == 1 {
			target, met = fmt.Sprintf("≥ %.1f", targetRead), verdicts(p, targetRead)
		}
		if !ran(p) {
			continue
		}
		row(fmt.Sprintf("full room read, %d events (%s)", size, sizeBytes(b.roomBytes[size])), p.a.rate()+" req/s", p.b.rate()+" req/s (same bytes from memory)", p.ratio.ratio(), p.cost.ratio(), target, met)
	}
	base304 := b.sel(path304, sideBaseline, 0)
	for _, size := range s {
		p := pair(b.sel(path304, sideService, size), base304)
		if !ran(p) {
			continue
		}
		row(fmt.Sprintf("304 (If-None-Match), %d events", size), p.a.rate()+" req/s", p.b.rate()+" tps (pgbench indexed lookup)", p.ratio.ratio(), p.cost.ratio(), fmt.Sprintf("≥ %.1f", target304), verdicts(p, target304))
	}
	baseGo := b.sel(path304, sideLookup, 0)
	for _, size := range s {
		p := pair(b.sel(path304, sideService, size), baseGo)
		if !ran(p) {
			continue
		}
		row(fmt.Sprintf("304 (If-None-Match), %d events, vs a Go server", size), p.a.rate()+" req/s", p.b.rate()+" req/s (Go net/http, one pgx lookup, 304)", p.ratio.ratio(), p.cost.ratio(), fmt.Sprintf("≥ %.1f", target304Go), verdicts(p, target304Go))
	}
	b.extraRows(row)
	b.logRows(row)
	for _, path := range []string{pathExchange, pathClaim} {
		for _, x := range b.sel(path, sideService, 0) {
			row(fmt.Sprintf("%s, %d participants once each", path, x.F.Requests), fmt.Sprintf("%s req/s, %s", thousands(x.F.ReqPerSec), latF(x.F)), "", "", "", "(absolute)", "—")
		}
	}
	var peak int64
	peakPath := ""
	for _, m := range b.ms {
		if m.Path == pathListen {
			continue // judged against the listeners' own bound
		}
		if m.F.PeakRSSKiB > peak {
			peak, peakPath = m.F.PeakRSSKiB, m.Path
		}
	}
	rss := spread{med: float64(peak) / 1024, lo: float64(peak) / 1024, hi: float64(peak) / 1024}
	row("peak RSS of consensusd, any load", fmt.Sprintf("%s (during %s)", kib(peak), peakPath), "", "", "", fmt.Sprintf("< %.0f MiB", targetRSSMiB), verdict(rss, targetRSSMiB, false))
	fp := pair(b.sel(pathFlat, sideLarge, 0), b.sel(pathFlat, sideSmall, 0))
	if ran(fp) {
		row(fmt.Sprintf("flatness: append at %d vs %d events", s[2], s[0]), fp.a.rate()+" events/s at "+fmt.Sprint(s[2]), fp.b.rate()+" events/s at "+fmt.Sprint(s[0]), fp.ratio.ratio(), fp.cost.ratio(), fmt.Sprintf("≥ %.1f", targetFlatness), bothVerdict(fp, targetFlatness))
	}
	np := pair(b.sel(path304, sideService, s[2]), b.sel(path304, sideService, s[0]))
	if ran(np) {
		row(fmt.Sprintf("flatness: 304 at %d vs %d events", s[2], s[0]), np.a.rate()+" req/s at "+fmt.Sprint(s[2]), np.b.rate()+" req/s at "+fmt.Sprint(s[0]), np.ratio.ratio(), np.cost.ratio(), fmt.Sprintf("≥ %.1f", targetFlatness), bothVerdict(np, targetFlatness))
	}

	var md strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&md, format+"\n", args...) }
	m := b.meta
	title := "Benchmark results"
	if cfg.Smoke {
		title += " (SMOKE RUN: figures mean nothing)"
	}
	w("# %s", title)
	w("")
	w("Written by `make bench` (internal/cmd/consensus-bench). Rerun it on the same machine to compare; compare ratios, not absolute figures, across machines.")
	w("")
	commit := m.commit
	if m.dirty {
		commit += " with uncommitted changes"
	}
	w("- **Date:** %s (took %s)", m.started.UTC().Format("2006-01-02 15:04 MST"), m.elapsed.Round(time.Second))
	w("- **Commit:** %s", commit)
	w("- **Command:** `%s`", cfg.Invocation)
	w("- **Machine:** %s, %d cores, %s memory, Linux %s; load average %s before, %s after", m.cpuModel, m.cores, m.memTotal, m.kernel, m.loadBefore, m.loadAfter)
	w("- **Software:** %s; PostgreSQL %s (fsync=%s, synchronous_commit=%s, full_page_writes=%s, shared_buffers=%s); %s", m.goVersion, m.pg["server_version"], m.pg["fsync"], m.pg["synchronous_commit"], m.pg["full_page_writes"], m.pg["shared_buffers"], m.pg["pgbench"])
	for _, name := range []string{"GOMEMLIMIT", "GOGC"} {
		if v, ok := os.LookupEnv(name); ok {
			w("- **consensusd's %s:** %s (passed on from the bench's environment)", name, v)
		}
	}
	w("- **Scale:** %d agreements × %d claimed participants; rooms of %d, %d and %d events; %d connections (wrk, `-t %d`) or clients (pgbench, `-j %d -M prepared`); %s per measurement; %d rounds, the service and its baseline alternating (A/B, then B/A)", cfg.Agreements, cfg.Parts, s[0], s[1], s[2], cfg.Conns, wrkThreads(cfg.Conns), min(2, cfg.Conns), cfg.Duration, cfg.Rounds)
	w("- **Load generators:** %s for append, full room read (both sides) and 304; vegeta (a Go library, in this process) for the count-bounded loads: exchange, claim, fill and the append flatness rounds; pgbench for the PostgreSQL baselines", b.wrkVersion())
	w("- **Profiles:** %s", b.pprofNote)
	if len(b.profileFiles) > 0 {
		slices.Sort(b.profileFiles)
		names := make([]string, len(b.profileFiles))
		for i, f := range b.profileFiles {
			names[i] = "`" + f[strings.LastIndex(f, "/")+1:] + "`"
		}
		w("  (%s; `go tool pprof -top bench/profiles/<file>`)", strings.Join(names, ", "))
	}
	w("")
	w("## Ratios against the targets (the performance contract)")
	w("")
	md.WriteString(rt.String())
	w("")
	w("Medians over the rounds; a ratio is taken within a round (service ÷ baseline, measured one after the other), then the median of those, with the lowest and highest beside it. Flatness is the rate at the large room ÷ the rate at the small room; %.1f lets the large room cost up to 25%% more per request. The CPU-cost ratio is the same comparison made with CPU time per answer instead of answers per second (the baseline's CPU per answer ÷ the service's, counting the server process and the whole PostgreSQL cluster, not the load generator): other work on the machine slows both sides' rates but hardly changes their CPU per answer, so when the two ratios disagree, trust the CPU-cost ratio for how much work a request does and the rate ratio for what a client sees. \"met\" judges the rate ratio and says when the CPU-cost ratio judges otherwise; for append and flatness both must pass.", targetFlatness)
	w("")

	w("## Event append")
	w("")
	w("Service: wrk, `POST …/events` comments (%d B command body), %d connections, a random room of the %d per request and that room's next participant (each wrk thread has its own share of every room's participants, and no participant passes the %d-event limit), a fresh `Idempotency-Key` each; the events in the rooms are counted in the service's database after each load. Baseline: `pgbench -n -c %d -j %d -T %d -M prepared` running, on its own tables in the same cluster: `\\set aid random(1, %d)`; `BEGIN; SELECT … FROM agreements WHERE id = … FOR UPDATE; INSERT INTO events …; COMMIT` (an events table with the service's columns and indexes, seeded with as many rows). Before each side, `VACUUM (ANALYZE)` of what the loads wrote and `CHECKPOINT`.", len(b.world.ags[0].body), cfg.Conns, cfg.Agreements, eventLimit, cfg.Conns, min(2, cfg.Conns), int(cfg.Duration/time.Second), cfg.Agreements)
	w("")
	w("| round | service events/s | service latency | events in the rooms (all %d) | pgbench tps | pgbench latency | ratio |", cfg.Agreements)
	w("| --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range ap.rounds {
		x, y := ap.am[r], ap.bm[r]
		w("| %d | %s | %s | %d → %d | %s | %s | %s |", r, thousands(x.F.ReqPerSec), latF(x.F), x.RoomFrom, x.RoomTo, thousands(y.F.ReqPerSec), latF(y.F), fmtRatio(safeDiv(x.F.ReqPerSec, y.F.ReqPerSec)))
	}
	w("")

	w("## Full room read")
	w("")
	w("Service: `GET …/room` as a random participant of the room (all %d claimed), %d connections. Baseline: a minimal Go net/http server (this program re-executed as its own process) answering with the bytes and headers the service sent for that room, from memory, to the same requests. wrk drives both sides.", cfg.Parts, cfg.Conns)
	w("")
	w("| room | round | service req/s | service latency | baseline req/s | baseline latency | ratio |")
	w("| --- | --- | --- | --- | --- | --- | --- |")
	for _, size := range s {
		p := pair(b.sel(pathRead, sideService, size), b.sel(pathRead, sideBaseline, size))
		for _, r := range p.rounds {
			x, y := p.am[r], p.bm[r]
			w("| %d events, %s | %d | %s | %s | %s | %s | %s |", size, sizeBytes(b.roomBytes[size]), r, thousands(x.F.ReqPerSec), latF(x.F), thousands(y.F.ReqPerSec), latF(y.F), fmtRatio(safeDiv(x.F.ReqPerSec, y.F.ReqPerSec)))
		}
	}
	w("")

	w("## 304 (If-None-Match with the current ETag)")
	w("")
	w("Service: wrk, `GET …/room` with each participant's current `ETag` (the ETag covers `you`, so it is per participant), %d connections; every answer must be 304. Baseline: `pgbench -n -c %d -j %d -T %d -M prepared`, `SELECT participant_id, agreement_id, revoked_at FROM tokens WHERE token_hash = sha256(int4send(:k))` on a %d-row table with a primary key on the hash, run once a round.", cfg.Conns, cfg.Conns, min(2, cfg.Conns), int(cfg.Duration/time.Second), cfg.Agreements*cfg.Parts)
	w("")
	w("| room | round | service req/s | service latency | pgbench tps | pgbench latency | ratio |")
	w("| --- | --- | --- | --- | --- | --- | --- |")
	for _, size := range s {
		p := pair(b.sel(path304, sideService, size), base304)
		for _, r := range p.rounds {
			x, y := p.am[r], p.bm[r]
			w("| %d events | %d | %s | %s | %s | %s | %s |", size, r, thousands(x.F.ReqPerSec), latF(x.F), thousands(y.F.ReqPerSec), latF(y.F), fmtRatio(safeDiv(x.F.ReqPerSec, y.F.ReqPerSec)))
		}
	}
	w("")

	w("## Append cost by room size (flatness)")
	w("")
	w("%d appends with %d connections into one room, a fresh room of %d events each round vs the room of %d; one room takes every append, so they queue on its lock and the rate shows how long each holds it. The rooms grow while measured (sizes shown). Each append commits (a WAL flush, fsync on) while it holds the lock, so this rate also follows the disk's flush latency, which other work on the machine makes bursty: the CPU per append (in the last columns) is the steadier figure, and flatness is met only when both ratios meet it.", cfg.FlatN, cfg.FlatConns, s[0], s[2])
	w("")
	w("| round | small room: events | events/s | latency | large room: events | events/s | latency | rate: large ÷ small | CPU per append: small, large |")
	w("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range fp.rounds {
		x, y := fp.am[r], fp.bm[r] // x: large, y: small
		w("| %d | %d → %d | %s | %s | %d → %d | %s | %s | %s | %s, %s |", r, y.RoomFrom, y.RoomTo, thousands(y.F.ReqPerSec), latF(y.F), x.RoomFrom, x.RoomTo, thousands(x.F.ReqPerSec), latF(x.F), fmtRatio(safeDiv(x.F.ReqPerSec, y.F.ReqPerSec)), fmtDur(y.F.cost()), fmtDur(x.F.cost()))
	}
	w("")

	w("## Exchange and claim (absolute, no baseline)")
	w("")
	w("Every participant once (%d each), %d connections, as fast as answers come; a claim uses the session its exchange returned.", cfg.Agreements*cfg.Parts, cfg.Conns)
	w("")
	w("| path | requests | req/s | latency | consensusd CPU per request | PostgreSQL CPU per request | peak RSS |")
	w("| --- | --- | --- | --- | --- | --- | --- |")
	for _, path := range []string{pathExchange, pathClaim, pathFill} {
		for _, x := range b.sel(path, sideService, 0) {
			name := path
			if path == pathFill {
				name = "fill (event appends, setup)"
			}
			w("| %s | %d | %s | %s | %s | %s | %s |", name, x.F.Requests, thousands(x.F.ReqPerSec), latF(x.F), fmtDur(x.F.perRequest(x.F.ServerCPU)), fmtDur(x.F.perRequest(x.F.PGCPU)), kib(x.F.PeakRSSKiB))
		}
	}
	w("")

	w("## Peak RSS of consensusd by load")
	w("")
	w("VmHWM from /proc/PID/status, reset (clear_refs 5) before each load; the highest over that load's rounds. The reset brings the peak down to the RSS at that moment, which holds what earlier loads left (the Go heap is not returned at once), shown as \"at start\" (the lowest over the rounds).")
	w("")
	w("| load | RSS at start | peak RSS |")
	w("| --- | --- | --- |")
	type key struct {
		path string
		size int
	}
	peaks := map[key]int64{}
	starts := map[key]int64{}
	var order []key
	for _, x := range b.ms {
		if x.F.PeakRSSKiB == 0 {
			continue
		}
		k := key{x.Path, x.Size}
		if x.Path == pathFlat || x.Path == pathAppend || x.Path == pathFill {
			k.size = 0
		}
		if _, ok := peaks[k]; !ok {
			order = append(order, k)
			starts[k] = x.F.StartRSS
		}
		peaks[k] = max(peaks[k], x.F.PeakRSSKiB)
		starts[k] = min(starts[k], x.F.StartRSS)
	}
	for _, k := range order {
		name := k.path
		if k.size > 0 {
			name = fmt.Sprintf("%s, %d events", k.path, k.size)
		}
		w("| %s | %s | %s |", name, kib(starts[k]), kib(peaks[k]))
	}
	w("")

	w("## Every measurement")
	w("")
	w("CPU per request: consensusd or the static server (server), the whole PostgreSQL cluster (PG), the load generator (client: the wrk process for append, read and 304; this program for vegeta's loads; the pgbench process), each divided by the answers counted. On 2 shared cores these say where the time goes better than any rate.")
	w("")
	w("| path | room | side | round | requests | ok/s | p50 | p99 | server CPU/req | PG CPU/req | client CPU/req | peak RSS | load 1m after | unexpected answers |")
	w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, x := range b.ms {
		room := "—"
		if x.Size > 0 {
			room = fmt.Sprint(x.Size)
		}
		rssCell := "—"
		if x.F.PeakRSSKiB > 0 {
			rssCell = kib(x.F.PeakRSSKiB)
		}
		p50 := fmtDur(x.F.P50)
		if x.F.Samples > 0 && x.F.Samples < x.F.Requests {
			p50 += fmt.Sprintf(" (%d sampled)", x.F.Samples)
		}
		errs := x.F.errorText()
		if errs == "" {
			errs = "none"
		}
		w("| %s | %s | %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |", x.Path, room, x.Side, x.Round, x.F.Requests, thousands(x.F.ReqPerSec), p50, fmtDur(x.F.P99), fmtDur(x.F.perRequest(x.F.ServerCPU)), fmtDur(x.F.perRequest(x.F.PGCPU)), fmtDur(x.F.perRequest(x.F.ClientCPU)), rssCell, x.F.Load1, errs)
	}
	w("")

	b.extraMarkdown(w)
	b.logMarkdown(w)

	w("## Set-up")
	w("")
	keys := make([]string, 0, len(b.setupTime))
	for k := range b.setupTime {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		w("- %s: %s", k, b.setupTime[k].Round(10*time.Millisecond))
	}
	w("- consensusd: built from the working tree, run as its own process with `CONSENSUS_ENV=local`, `CONSENSUS_RATE_LIMIT=0`, Maildir mail, generated operator token and token key, `CONSENSUS_OPS_LISTEN` and `CONSENSUS_PPROF=true`; its log is %s", b.svc.logPath)
	w("- PostgreSQL: deploy/local/pg.sh (Unix socket only) in %s, databases `%s` (service) and `%s` (pgbench's tables), both recreated at every run", cfg.PGDir, serviceDB, baselineDB)
	w("")
	w("## Caveats")
	w("")
	w("- Everything (PostgreSQL, consensusd, the baselines and the load generator) shares the machine's %d cores, and other work on the machine is not under the bench's control (see the load averages above). Rates are closed-loop maxima under that sharing, so compare ratios taken in the same run; the spread over rounds is the noise to judge a difference against.", m.cores)
	w("- pgbench's p50/p99 come from a %.0f%% sample of its transactions (`--sampling-rate`); wrk's from every answer it received (its histogram); vegeta's from every request (t-digest estimate).", pgbenchSampling*100)
	w("- wrk counts a latency from writing the request to the end of the answer; vegeta from just before the request is built to the last byte of the answer; pgbench from just before the transaction is sent to its end. The load generator's own CPU competes with the server's in all three.")
	for _, c := range b.wrkCaveats() {
		w("- %s", c)
	}
	for _, n := range b.notes {
		w("- %s", n)
	}
	return report{markdown: md.String(), ratioTable: rt.String()}
}
