package main

import (
	"fmt"
	"time"
)

// extraRows adds the busy room, the long run and the listeners to the
// ratio table.
func (b *bench) extraRows(row func(cells ...string)) {
	cfg := b.cfg
	bp := pair(b.sel(pathBusy, sideService, 0), b.sel(pathBusy, sideBaseline, 0))
	if len(bp.rounds) > 0 {
		row(fmt.Sprintf("one busy room: %d conns into one room", cfg.Conns), bp.a.rate()+" events/s", bp.b.rate()+" tps (pgbench minimal append, one row)", bp.ratio.ratio(), bp.cost.ratio(), fmt.Sprintf("≥ %.1f", targetBusy), verdicts(bp, targetBusy))
	}
	for _, m := range b.sel(pathLong, sideService, 0) {
		rss := float64(m.F.PeakRSSKiB) / 1024
		row(fmt.Sprintf("peak RSS, %s append run over %d rooms", cfg.LongDuration, len(b.world.listen)), fmt.Sprintf("%s (%s events/s)", kib(m.F.PeakRSSKiB), thousands(m.F.ReqPerSec)), "", "", "", fmt.Sprintf("< %.0f MiB", targetRSSMiB), verdict(spread{med: rss, lo: rss, hi: rss}, targetRSSMiB, false))
	}
	defer b.parkedOffRows(row)
	l := b.listeners
	if l == nil {
		return
	}
	p99 := l.p99.Seconds() * 1000
	row(fmt.Sprintf("listeners: post to wake, %d streams + %d long polls over %d rooms", l.streams, l.polls, len(b.world.listen)), fmt.Sprintf("p99 %s (p50 %s, %d wake-ups, %d missed)", fmtDur(l.p99), fmtDur(l.p50), l.wakes, l.missed), "", "", "", fmt.Sprintf("p99 < %s", targetWakeP99), verdict(spread{med: p99, lo: p99, hi: p99}, float64(targetWakeP99/time.Millisecond), false))
	rss := float64(l.peakRSS) / 1024
	row("listeners: peak RSS of consensusd", kib(l.peakRSS), "", "", "", fmt.Sprintf("< %.0f MiB", targetListenRSSMiB), verdict(spread{med: rss, lo: rss, hi: rss}, targetListenRSSMiB, false))
	with := pair(b.sel(pathListen, sideService, 0), b.sel(pathListen, sideBaseline, 0))
	without := pair(b.sel(pathAppend, sideService, 0), b.sel(pathAppend, sideBaseline, 0))
	if len(with.rounds) > 0 && without.ratio.med > 0 {
		rel := with.ratio.med / without.ratio.med
		row("listeners: append ratio with them ÷ without", fmt.Sprintf("%s with (%s events/s)", with.ratio.ratio(), with.a.rate()), fmt.Sprintf("%s without", without.ratio.ratio()), fmtRatio(rel), "", fmt.Sprintf("≥ %.1f", targetListenAppend), verdict(spread{med: rel, lo: rel, hi: rel}, targetListenAppend, true))
	}
}

// extraMarkdown writes the sections of the busy room, the long run and
// the listeners.
func (b *bench) extraMarkdown(w func(format string, args ...any)) {
	cfg := b.cfg
	bp := pair(b.sel(pathBusy, sideService, 0), b.sel(pathBusy, sideBaseline, 0))
	if len(bp.rounds) > 0 {
		w("## One busy room")
		w("")
		w("Service: wrk, %d connections, every request a comment into one room (a fresh room of %d participants each round; at %d events per participant it holds %d appends), %s per side. Baseline: the append pgbench script above with its %d clients all on one agreement row (`aid` always 1). Both serialize on one row lock; before each side, `VACUUM (ANALYZE)` of what the loads wrote and `CHECKPOINT`.", cfg.Conns, cfg.Parts, eventLimit, cfg.Parts*eventLimit, cfg.BusyDuration, cfg.Conns)
		w("")
		w("| round | service events/s | service latency | events in the room | pgbench tps | pgbench latency | ratio | CPU per append: service, pgbench |")
		w("| --- | --- | --- | --- | --- | --- | --- | --- |")
		for _, r := range bp.rounds {
			x, y := bp.am[r], bp.bm[r]
			w("| %d | %s | %s | %d → %d | %s | %s | %s | %s, %s |", r, thousands(x.F.ReqPerSec), latF(x.F), x.RoomFrom, x.RoomTo, thousands(y.F.ReqPerSec), latF(y.F), fmtRatio(safeDiv(x.F.ReqPerSec, y.F.ReqPerSec)), fmtDur(x.F.cost()), fmtDur(y.F.cost()))
		}
		w("")
	}
	w("## 304 against a minimal Go server")
	w("")
	w("The Go lookup server is this program re-executed as its own process: net/http, a pgx pool of %d connections (consensusd's default) on the baseline database, and per request one `SELECT participant_id, agreement_id, revoked_at FROM tokens WHERE token_hash = $1` (sha256 of the credential's number, the primary key) and a 304; wrk sends it the same %d connections with a random credential of the %d each. It runs right after pgbench's lookup in every round; the service's 304 rows above are compared with it in the ratio table.", lookupPoolConns, cfg.Conns, cfg.Agreements*cfg.Parts)
	w("")
	for _, m := range b.sel(pathLong, sideService, 0) {
		w("## Long append run")
		w("")
		w("wrk, %d connections, comments into the %d listener rooms (%d participants each, before any listener attached), %s; peak RSS is VmHWM over the run, reset before it. %d appends, %s events/s, %s; RSS %s at start, peak %s; rooms held %d → %d events.", cfg.Conns, len(b.world.listen), cfg.ListenParts, cfg.LongDuration, m.F.OK, thousands(m.F.ReqPerSec), latF(m.F), kib(m.F.StartRSS), kib(m.F.PeakRSSKiB), m.RoomFrom, m.RoomTo)
		w("")
	}
	defer b.parkedOffMarkdown(w)
	if l := b.listeners; l != nil {
		w("## Listeners")
		w("")
		w("This program holds %d event streams (`GET …/stream`) and %d long polls of the feed (`GET …/events?after=<last seq seen>` with `Prefer: wait=60`, sent again at once after each answer) on one consensusd, over %d rooms of %d participants (each participant %d streams and %d polls, the per-participant bound of 4). Attaching took %s, until the service held every listener (its requests in flight counted them all). Then %d waves of one post per room (8 posters): for every listener, the wake-up time is from just before the post was sent to when the listener read the event (the stream's `id:` line, or the poll's answer); the long append run before filled these rooms. %d posts, %d wake-ups measured: p50 %s, p99 %s, worst %s; %d expected wake-ups did not come within 10 s of their wave. The p99 of the streams' wake-ups was %s, of the polls' %s; the posts themselves were answered in p50 %s, p99 %s (a wake-up cannot come before its post commits). Peak RSS %s (RSS %s before attaching), over the waves and the append rounds that follow.", l.streams, l.polls, len(b.world.listen), cfg.ListenParts, cfg.StreamsPer, cfg.PollsPer, l.attach.Round(time.Millisecond), cfg.Waves, l.posts, l.wakes, fmtDur(l.p50), fmtDur(l.p99), fmtDur(l.worst), l.missed,
			fmtDur(l.p99By[kindStream]), fmtDur(l.p99By[kindPoll]), fmtDur(l.postP50), fmtDur(l.postP99), kib(l.peakRSS), kib(l.startRSS))
		w("")
		w("With them still attached, %d rounds of the event append against pgbench (`%s`), as the main append rounds run but into %d rooms of %d participants of their own, which nobody listens to (the main rooms' event slots are the main rounds'). Each round starts with one more wave, not measured, so every poll was sent again seconds before it and no poll's wait runs out inside it. The ratio with the listeners is the median of the rounds' ratios, over the main rounds' median.", cfg.Rounds, pathListen, len(b.world.beside), cfg.Parts)
		w("")
		lp := pair(b.sel(pathListen, sideService, 0), b.sel(pathListen, sideBaseline, 0))
		w("| round | service events/s | service latency | pgbench tps | ratio | CPU per append: service, pgbench |")
		w("| --- | --- | --- | --- | --- | --- |")
		for _, r := range lp.rounds {
			x, y := lp.am[r], lp.bm[r]
			w("| %d | %s | %s | %s | %s | %s, %s |", r, thousands(x.F.ReqPerSec), latF(x.F), thousands(y.F.ReqPerSec), fmtRatio(safeDiv(x.F.ReqPerSec, y.F.ReqPerSec)), fmtDur(x.F.cost()), fmtDur(y.F.cost()))
		}
		if len(l.errors) > 0 {
			w("")
			w("Listener errors: %v", l.errors)
		}
		w("")
	}
}
