package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The wrk loads of append, read and 304, and the bookkeeping they need.

func (b *bench) wrkDir() string { return filepath.Join(b.cfg.WorkDir, "wrk") }

// readLoad reads a's room as random participants; conditional adds each
// one's current ETag (every answer must then be 304).
func (b *bench) readLoad(name string, a *agreement, conditional bool, d time.Duration) wrkLoad {
	ts := make([]readTarget, len(a.parts))
	for i, p := range a.parts {
		ts[i] = readTarget{Path: requestPath(p.roomURL), Auth: p.auth.Get("Authorization")}
		if conditional {
			ts[i].ETag = p.etag
		}
	}
	e := expectRead
	if conditional {
		e = expect304
	}
	return wrkLoad{Name: name, Script: readLua(ts), BaseURL: b.svc.origin, Conns: b.cfg.Conns, Duration: d,
		Metrics: "http://" + b.svc.ops + "/metrics", Expect: e}
}

// staticLoad sends the same request shapes (a random participant's
// credential) to the baseline server's copy of the room of size events.
func (b *bench) staticLoad(name string, a *agreement, size int, d time.Duration) wrkLoad {
	ts := make([]readTarget, len(a.parts))
	for i, p := range a.parts {
		ts[i] = readTarget{Path: staticRoomPath(size), Auth: p.auth.Get("Authorization")}
	}
	return wrkLoad{Name: name, Script: readLua(ts), BaseURL: "http://" + b.static.addr, Conns: b.cfg.Conns, Duration: d}
}

// appendLoad spreads comments over every room. Each wrk thread gets a
// disjoint share of each room's participants (participant i goes to thread
// i mod threads) with the events each may still post, so no participant
// passes the limit however the threads' requests interleave.
func (b *bench) appendLoad(name string, ags []*agreement, d time.Duration) wrkLoad {
	threads := wrkThreads(b.cfg.Conns)
	rooms := make([]appendRoom, 0, len(ags))
	for _, a := range ags {
		r := appendRoom{Body: string(a.body)}
		for i, p := range a.parts {
			if left := eventLimit - p.used; left > 0 {
				r.Slots = append(r.Slots, appendSlot{Thread: i % threads, Path: requestPath(p.eventsURL), Auth: p.auth.Get("Authorization"), Budget: left})
			}
		}
		rooms = append(rooms, r)
	}
	prefix := fmt.Sprintf("bench-%s-wrk%d-", b.world.runID, b.world.keys.Add(1))
	return wrkLoad{Name: name, Script: appendLua(rooms, prefix), BaseURL: b.svc.origin, Conns: b.cfg.Conns, Duration: d,
		Metrics: "http://" + b.svc.ops + "/metrics", Expect: expectAppend}
}

// wrkService runs l against consensusd and cross-checks wrk's count of
// answers with the /metrics delta.
func (b *bench) wrkService(ctx context.Context, l wrkLoad) (wrkRun, error) {
	run, err := runWrk(ctx, b.wrk, b.wrkDir(), b.serviceWatch(), l)
	if err != nil {
		return run, err
	}
	diff := run.Counted - run.Res.Requests
	b.wrkChecks++
	b.wrkAbandoned += run.Abandoned
	b.wrkDiffMin, b.wrkDiffMax = min(b.wrkDiffMin, diff), max(b.wrkDiffMax, diff)
	// A request in flight when wrk stops may be answered (and counted by
	// the service) without wrk counting it: at most one per connection.
	if diff < 0 || diff > int64(l.Conns) {
		b.note("%s: /metrics counted %d answers, wrk %d (expected /metrics ≥ wrk by at most the %d connections' in-flight requests)", l.Name, run.Counted, run.Res.Requests, l.Conns)
	}
	return run, nil
}

func (b *bench) wrkStatic(ctx context.Context, l wrkLoad) (figures, error) {
	run, err := runWrk(ctx, b.wrk, b.wrkDir(), b.staticWatch(), l)
	return run.F, err
}

// wrkAppend runs an append load, then takes each participant's and each
// room's event count from the service's database (wrk cannot say which
// appends succeeded, and requests cut off at the end may or may not have
// been stored), so the next loads never push a participant past the limit.
func (b *bench) wrkAppend(ctx context.Context, name string, d time.Duration) (figures, error) {
	return b.wrkAppendOf(ctx, name, b.world.ags, d)
}

// wrkAppendOf is wrkAppend into the rooms of ags only.
func (b *bench) wrkAppendOf(ctx context.Context, name string, ags []*agreement, d time.Duration) (figures, error) {
	run, err := b.wrkService(ctx, b.appendLoad(name, ags, d))
	if err != nil {
		return run.F, err
	}
	b.exhausted = run.Res.Exhausted
	if run.Res.Exhausted > 0 && len(ags) > 1 {
		b.note("%s: %d requests found every participant of a wrk thread at %d events on the revision (the per-participant limit) and went to %s (404: unexpected answers when the load is measured) instead of appending; shorten -duration", name, run.Res.Exhausted, eventLimit, exhaustedPath)
	}
	return run.F, b.syncEvents(ctx)
}

// syncEvents reads the stored events per participant and revision from
// bench_service into p.used and each room's stored count.
func (b *bench) syncEvents(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, b.cl.url(serviceDB))
	if err != nil {
		return fmt.Errorf("count events: %w", err)
	}
	defer conn.Close(ctx)
	// Only the bench's own rooms: at scale the table holds a million
	// loaded events besides them.
	var ids []string
	for _, a := range b.world.allAgreements() {
		ids = append(ids, a.id)
	}
	rows, err := conn.Query(ctx, `SELECT agreement_id::text, participant_id::text, revision, count(*) FROM events
		WHERE agreement_id = ANY($1::uuid[]) GROUP BY 1, 2, 3`, ids)
	if err != nil {
		return fmt.Errorf("count events: %w", err)
	}
	byID := map[string]*participant{}
	for _, p := range b.world.every() {
		byID[p.participant] = p
	}
	used := map[*participant]int{}
	stored := map[string]int64{}
	for rows.Next() {
		var ag, pid string
		var rev int
		var n int64
		if err := rows.Scan(&ag, &pid, &rev, &n); err != nil {
			return err
		}
		stored[ag] += n
		if p := byID[pid]; p != nil && rev == p.agreement.revision {
			used[p] += int(n)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("count events: %w", err)
	}
	for _, a := range b.world.allAgreements() {
		a.stored.Store(stored[a.id])
		for _, p := range a.parts {
			if used[p] > eventLimit {
				return fmt.Errorf("participant %d of agreement %d has %d events on the revision, past the limit of %d: the append bookkeeping is wrong", p.index+1, a.index+1, used[p], eventLimit)
			}
			p.used = used[p]
		}
	}
	return nil
}

// wrkVersion is wrk's first line of `wrk --version` ("wrk 4.1.0 …").
func (b *bench) wrkVersion() string {
	out, _ := exec.Command(b.wrk, "--version").CombinedOutput()
	line, _, _ := strings.Cut(string(out), "\n")
	if i := strings.Index(line, " Copyright"); i > 0 {
		line = line[:i]
	}
	if line = strings.TrimSpace(line); line == "" {
		return "wrk"
	}
	return "`" + line + "`"
}

// wrkCaveats says how the status accounting of the wrk loads went.
func (b *bench) wrkCaveats() []string {
	if b.wrkChecks == 0 {
		return nil
	}
	out := []string{fmt.Sprintf("Statuses of the wrk loads on consensusd come from its own counter (`%s` on the ops listener's /metrics, read before and after each load): an answer counts when its route, method and status are the expected ones, and any other is listed as unexpected, as are wrk's socket errors and timeouts. For the static server, wrk's count of statuses ≥ 400 and its socket errors are the unexpected answers. Over the %d loads on consensusd, /metrics counted between %d and %d answers more than wrk did: requests still in flight when wrk stopped are answered and counted by the service, not by wrk (at most one per connection); rates use wrk's count.", requestsMetric, b.wrkChecks, b.wrkDiffMin, b.wrkDiffMax)}
	if b.wrkAbandoned > 0 {
		out = append(out, fmt.Sprintf("%d requests were abandoned by wrk when its time was up, with their answers still being made (the service records them as 499, closed by the client); they are not listed as unexpected, and they are left out of the request counts.", b.wrkAbandoned))
	}
	return out
}
