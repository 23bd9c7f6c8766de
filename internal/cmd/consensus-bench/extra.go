package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The loads of the busy room, the long append run and the listeners. They
// use agreements of their own, made after the main set-up, so the main
// loads measure what they always measured:
//   - one fresh room of cfg.Parts participants per round for the busy room
//     (a participant posts at most eventLimit events per revision, so a
//     room holds at most cfg.Parts × eventLimit appends);
//   - cfg.ListenRooms rooms of cfg.ListenParts participants for the
//     listeners, whose event slots the long append run then spends;
//   - cfg.Agreements rooms of cfg.Parts participants, like the main ones,
//     for the append rounds made with the listeners attached (the main
//     rooms' event slots are the main rounds').

const (
	pathBusy   = "append-busy"
	pathLong   = "append-long"
	pathListen = "append-listeners"
	pathWake   = "wake"
	// sideLookup is the 304 path's second baseline: a minimal Go server,
	// one pgx lookup per request.
	sideLookup = "Go lookup server"
)

// setupExtra makes the busy and listener rooms and claims their
// participants (not measured).
func (b *bench) setupExtra(ctx context.Context) error {
	cfg := b.cfg
	t := time.Now()
	along := 0
	if cfg.ListenRooms > 0 {
		along = cfg.Agreements
	}
	cfg.logf("== %d busy rooms × %d participants, %d listener rooms × %d participants and %d rooms × %d for the appends beside the listeners", cfg.Rounds, cfg.Parts, cfg.ListenRooms, cfg.ListenParts, along, cfg.Parts)
	busy, err := b.createAgreementSet(ctx, cfg.Agreements, cfg.Rounds, cfg.Parts)
	if err != nil {
		return err
	}
	listen, err := b.createAgreementSet(ctx, cfg.Agreements+cfg.Rounds, cfg.ListenRooms, cfg.ListenParts)
	if err != nil {
		return err
	}
	beside, err := b.createAgreementSet(ctx, cfg.Agreements+cfg.Rounds+cfg.ListenRooms, along, cfg.Parts)
	if err != nil {
		return err
	}
	b.world.busy, b.world.listen, b.world.beside = busy, listen, beside
	if err := b.readInvitations(ctx); err != nil {
		return err
	}
	var ps []*participant
	for _, a := range slices.Concat(busy, listen, beside) {
		ps = append(ps, a.parts...)
	}
	if _, err := b.exchangeAll(ctx, ps); err != nil {
		return fmt.Errorf("busy, listener and beside rooms: %w", err)
	}
	if _, err := b.claimAll(ctx, ps); err != nil {
		return fmt.Errorf("busy, listener and beside rooms: %w", err)
	}
	b.setupTime[fmt.Sprintf("busy, listener and beside rooms: create, deliver, exchange and claim %d participants", len(ps))] = time.Since(t)
	return nil
}

// busyRounds: every connection posts into one room (a fresh one each
// round) vs pgbench's minimal append with every client on one agreement
// row. Both queue on one row lock; the service may share a commit between
// the appends it holds, pgbench cannot.
func (b *bench) busyRounds(ctx context.Context) error {
	cfg := b.cfg
	cfg.logf("== one busy room: %d connections into one room vs pgbench's %d clients on one row (%s each)", cfg.Conns, cfg.Conns, cfg.BusyDuration)
	for r := 1; r <= cfg.Rounds; r++ {
		room := b.world.busy[r-1]
		for _, side := range sides(r) {
			if err := b.cl.quiet(ctx); err != nil {
				return err
			}
			b.pause(ctx)
			if side == sideBaseline {
				f, err := runPgbench(ctx, b.cl, b.logDir, pgbenchRun{
					Name: fmt.Sprintf("busy-r%d", r), Script: b.appendSQL, Conns: cfg.Conns, Duration: cfg.BusyDuration,
					Vars: map[string]string{"agreements": "1", "participants": fmt.Sprint(cfg.Parts)},
				})
				if err != nil {
					return err
				}
				b.record(measurement{Path: pathBusy, Side: side, Round: r, F: f})
				continue
			}
			from := int(room.stored.Load())
			f, err := b.wrkAppendOf(ctx, fmt.Sprintf("busy-r%d", r), []*agreement{room}, cfg.BusyDuration)
			if err != nil {
				return err
			}
			if b.exhausted > 0 {
				// Every participant of the room used up its events before
				// the time was up: the rest went to a path that answers 404.
				// The rate counts the appends stored over the whole time, a
				// lower bound of the room's rate.
				for k, v := range f.Unexpected {
					if strings.HasPrefix(k, "404 ") {
						delete(f.Unexpected, k)
						f.Requests -= v
					}
				}
				b.note("busy room, round %d: its %d participants used up their %d events each before %s were over; the rate is a lower bound", r, cfg.Parts, eventLimit, cfg.BusyDuration)
			}
			b.record(measurement{Path: pathBusy, Side: side, Round: r, F: f, RoomFrom: from, RoomTo: int(room.stored.Load())})
		}
	}
	if len(b.world.busy) > 0 {
		room := b.world.busy[len(b.world.busy)-1]
		b.profilePass(ctx, "append-busy", func(ctx context.Context, name string, d time.Duration) error {
			_, err := b.wrkAppendOf(ctx, name, []*agreement{room}, min(d, time.Second))
			return err
		})
	}
	return nil
}

// longAppend: appends over the listener rooms for cfg.LongDuration, for
// the peak RSS of a long run (the Go heap grows with what a load leaves
// behind, not only with what is in flight).
func (b *bench) longAppend(ctx context.Context) error {
	if b.cfg.LongDuration <= 0 {
		return nil
	}
	b.cfg.logf("== long append run: %s over the %d listener rooms, %d connections (peak RSS)", b.cfg.LongDuration, len(b.world.listen), b.cfg.Conns)
	if err := b.cl.quiet(ctx); err != nil {
		return err
	}
	// The same load first, for longWarmup, not recorded: the peak is then
	// the long run's own. The reset before a load can bring VmHWM down
	// only to the RSS of that moment, and the profile pass just before
	// (the busy room's) leaves what the runtime built the profiles in
	// until the next collections free it: in a full run the long run
	// started at 65.2 MiB and never rose above it, while samples taken
	// during it read 59 MiB.
	if b.cfg.Warmup > 0 {
		if _, err := b.wrkAppendOf(ctx, "append-long-warmup", b.world.listen, longWarmup); err != nil {
			return err
		}
		b.pause(ctx)
	}
	from := storedOf(b.world.listen)
	f, err := b.wrkAppendOf(ctx, "append-long", b.world.listen, b.cfg.LongDuration)
	if err != nil {
		return err
	}
	b.record(measurement{Path: pathLong, Side: sideService, Round: 1, F: f, RoomFrom: from, RoomTo: storedOf(b.world.listen)})
	return nil
}

// longWarmup is the unrecorded load before the long run (whole seconds,
// as wrk takes them).
const longWarmup = 3 * time.Second

func storedOf(ags []*agreement) int {
	n := 0
	for _, a := range ags {
		n += int(a.stored.Load())
	}
	return n
}

// listenerResult is what the listener phase found.
type listenerResult struct {
	streams, polls  int // attached
	attach          time.Duration
	posts           int
	wakes           int // listener wake-ups measured
	missed          int // wake-ups that never came within the wave's time
	p50, p99, worst time.Duration
	// The wake-ups' p99 by kind (streams, polls), and the posts' own
	// answer times: a wake-up cannot come before its post commits.
	p99By            [2]time.Duration
	postP50, postP99 time.Duration
	peakRSS          int64
	startRSS         int64
	errors           map[string]int
}

// The kinds of listener, as wakeBook counts them.
const (
	kindStream = iota
	kindPoll
)

// listener wake-ups: per room, per seq, when the post was sent.
type wakeBook struct {
	mu    sync.Mutex
	sent  map[*agreement]map[int64]sentPost
	wakes []wake                             // every wake-up; by kind and by wave are derived
	wave  int                                // the wave being posted
	posts []time.Duration                    // each post's time to its answer
	late  map[*agreement]map[int64][]arrival // arrivals before the post's seq was known
	seen  atomic.Int64
	errs  map[string]int
	ready atomic.Int64
}

// arrival is when a listener of kind read an event.
type arrival struct {
	at   time.Time
	kind int
}

// sentPost is when a post was sent, in which wave.
type sentPost struct {
	at   time.Time
	wave int
}

// wake is one wake-up: a listener of kind read a post of wave d after
// the post was sent.
type wake struct {
	kind, wave int
	d          time.Duration
}

// woke records one wake-up; w.mu is held.
func (w *wakeBook) woke(kind, wave int, d time.Duration) {
	w.wakes = append(w.wakes, wake{kind, wave, d})
}

// tail is the p50, p99 and worst of ds, which it sorts.
func tail(ds []time.Duration) (p50, p99, worst time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	return quantile(ds, 0.5), quantile(ds, 0.99), ds[len(ds)-1]
}

func (w *wakeBook) arrived(a *agreement, seq int64, at time.Time, kind int) {
	if seq <= a.listenFrom {
		return // stored before the listeners attached
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if sp, ok := w.sent[a][seq]; ok {
		w.woke(kind, sp.wave, at.Sub(sp.at))
	} else {
		if w.late[a] == nil {
			w.late[a] = map[int64][]arrival{}
		}
		w.late[a][seq] = append(w.late[a][seq], arrival{at, kind})
	}
	w.seen.Add(1)
}

// posted records a post sent at t0 and answered at done.
func (w *wakeBook) posted(a *agreement, seq int64, t0, done time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.posts = append(w.posts, done.Sub(t0))
	if w.sent[a] == nil {
		w.sent[a] = map[int64]sentPost{}
	}
	w.sent[a][seq] = sentPost{t0, w.wave}
	for _, ar := range w.late[a][seq] {
		w.woke(ar.kind, w.wave, ar.at.Sub(t0))
	}
	delete(w.late[a], seq)
}

func (w *wakeBook) fail(what string) {
	w.mu.Lock()
	w.errs[what]++
	w.mu.Unlock()
}

// listenerPhase attaches cfg.StreamsPer streams and cfg.PollsPer held long
// polls per participant of every listener room (2,000 + 2,000 over 200
// rooms by default), posts cfg.Waves events into every room, one per room
// per wave, and takes, for every listener, the time from just before the
// post was sent to the moment the listener received it. Then, with them
// still attached, cfg.Rounds append rounds into the beside rooms against
// pgbench, and a heap profile and a profile pass of the same load.
func (b *bench) listenerPhase(ctx context.Context) error {
	cfg := b.cfg
	if cfg.ListenRooms == 0 {
		return nil
	}
	rooms := b.world.listen
	nStreams := len(rooms) * cfg.ListenParts * cfg.StreamsPer
	nPolls := len(rooms) * cfg.ListenParts * cfg.PollsPer
	cfg.logf("== listeners: %d streams and %d held long polls over %d rooms", nStreams, nPolls, len(rooms))
	res := listenerResult{errors: map[string]int{}}
	book := &wakeBook{sent: map[*agreement]map[int64]sentPost{}, late: map[*agreement]map[int64][]arrival{}, errs: res.errors}
	tr := &http.Transport{MaxIdleConns: 0, MaxIdleConnsPerHost: nStreams + nPolls + 64, DisableCompression: true, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	lctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()

	w := b.serviceWatch()
	startRSS, err := w.rssStart()
	if err != nil {
		return err
	}
	for _, a := range rooms {
		a.listenFrom = a.stored.Load()
	}
	t := time.Now()
	for _, a := range rooms {
		for _, p := range a.parts {
			for range cfg.StreamsPer {
				wg.Add(1)
				go func() { defer wg.Done(); b.stream(lctx, client, p, book) }()
			}
			for range cfg.PollsPer {
				wg.Add(1)
				go func() { defer wg.Done(); b.poll(lctx, client, p, book) }()
			}
		}
	}
	// Streams count themselves ready at their first line; polls once sent.
	// A poll sent may still wait in the kernel's accept queue: the
	// listeners are attached once the service holds them all (each is a
	// request in flight until it is answered). A wave posted before then
	// measures the connection storm: its posts' new connections queue
	// behind the polls still connecting (2.3 s in a run that did).
	deadline := time.Now().Add(2 * time.Minute)
	for book.ready.Load() < int64(nStreams+nPolls) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	metrics := "http://" + b.svc.ops + "/metrics"
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if _, inFlight, err := scrapeMetrics(ctx, metrics); err != nil || inFlight >= float64(nStreams+nPolls) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	res.attach = time.Since(t)
	res.streams, res.polls = nStreams, nPolls
	cfg.logf("   %d of %d listeners attached in %s", book.ready.Load(), nStreams+nPolls, res.attach.Round(time.Millisecond))

	// Waves: one post per room, 8 posters; the next wave once every
	// listener got this one (or 10 s passed).
	perRoom := cfg.ListenParts * (cfg.StreamsPer + cfg.PollsPer)
	var posts atomic.Int64
	for i := range cfg.Waves {
		book.mu.Lock()
		book.wave = i
		book.mu.Unlock()
		res.missed += b.wave(ctx, rooms, perRoom, book, &posts)
	}
	res.posts = int(posts.Load())
	book.mu.Lock()
	var all []time.Duration
	var byKind [2][]time.Duration
	byWave := make([][]time.Duration, cfg.Waves)
	for _, k := range book.wakes {
		all = append(all, k.d)
		byKind[k.kind] = append(byKind[k.kind], k.d)
		byWave[k.wave] = append(byWave[k.wave], k.d)
	}
	answered := slices.Clone(book.posts)
	book.mu.Unlock()
	// Wave by wave, for the log: where the tail sits.
	for i, l := range byWave {
		p50, p99, worst := tail(l)
		cfg.logf("   wave %d: %d wake-ups, p50 %s, p99 %s, worst %s", i+1, len(l), fmtDur(p50), fmtDur(p99), fmtDur(worst))
	}
	for k, l := range byKind {
		_, res.p99By[k], _ = tail(l)
	}
	res.postP50, res.postP99, _ = tail(answered)
	res.wakes = len(all)
	res.p50, res.p99, res.worst = tail(all)
	cfg.logf("   %d wake-ups: p50 %s, p99 %s, worst %s; %d missed; p99 of streams %s, of polls %s; posts answered in p50 %s, p99 %s", res.wakes, fmtDur(res.p50), fmtDur(res.p99), fmtDur(res.worst), res.missed,
		fmtDur(res.p99By[kindStream]), fmtDur(res.p99By[kindPoll]), fmtDur(res.postP50), fmtDur(res.postP99))

	// Each service load resets VmHWM as it starts (serviceWatch): the
	// phase's peak is kept across them.
	keepPeak := func() {
		if v, err := readPeakRSS(b.svc.pid); err == nil {
			res.peakRSS = max(res.peakRSS, v)
		}
	}
	// A listener's request that ends meanwhile is counted by /metrics too:
	// it is the listeners', not the load's.
	listenersOwn := func(f *figures) {
		for k, v := range f.Unexpected {
			if strings.HasPrefix(k, "200 (GET ") {
				delete(f.Unexpected, k)
				f.Requests -= v
			}
		}
	}
	// With them still attached, cfg.Rounds append rounds against pgbench,
	// into the beside rooms (made as the main ones are). Each round starts
	// with one more wave, not measured: every poll is then sent again
	// within seconds of the round, and no poll's wait (60 s) runs out
	// inside it.
	for r := 1; r <= cfg.Rounds; r++ {
		_ = b.wave(ctx, rooms, perRoom, book, &posts)
		for _, side := range sides(r) {
			keepPeak()
			if err := b.appendSide(ctx, pathListen, r, side, b.world.beside, listenersOwn); err != nil {
				return err
			}
		}
	}
	keepPeak()
	res.startRSS = startRSS
	b.listeners = &res
	// What the listeners hold and what an append costs beside them, once
	// every figure above is taken.
	b.heapProfile(ctx, "listeners")
	b.profilePass(ctx, pathListen, func(ctx context.Context, name string, d time.Duration) error {
		_, err := b.wrkAppendOf(ctx, name, b.world.beside, d)
		return err
	})
	return nil
}

// wave posts once into each of rooms (8 posters) and waits until every
// listener read its post, or 10 s; it returns how many wake-ups did not
// come.
func (b *bench) wave(ctx context.Context, rooms []*agreement, perRoom int, book *wakeBook, posts *atomic.Int64) int {
	want := book.seen.Load() + int64(len(rooms)*perRoom)
	jobs := make(chan *agreement)
	var pw sync.WaitGroup
	for range 8 {
		pw.Add(1)
		go func() {
			defer pw.Done()
			for a := range jobs {
				if err := b.postOne(ctx, a, book); err != nil {
					book.fail("post: " + err.Error())
				} else {
					posts.Add(1)
				}
			}
		}()
	}
	for _, a := range rooms {
		jobs <- a
	}
	close(jobs)
	pw.Wait()
	end := time.Now().Add(10 * time.Second)
	for book.seen.Load() < want && time.Now().Before(end) {
		time.Sleep(10 * time.Millisecond)
	}
	return int(max(0, want-book.seen.Load()))
}

// stream holds one event stream open and notes when each event arrives.
func (b *bench) stream(ctx context.Context, c *http.Client, p *participant, book *wakeBook) {
	url := strings.TrimSuffix(p.roomURL, "/room") + "/stream"
	first := true
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Consensus-Participant "+p.token)
		resp, err := c.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				book.fail("stream: " + err.Error())
				time.Sleep(time.Second)
			}
			continue
		}
		if resp.StatusCode != http.StatusOK {
			book.fail(fmt.Sprintf("stream: %d", resp.StatusCode))
			resp.Body.Close()
			time.Sleep(time.Second)
			continue
		}
		if first {
			book.ready.Add(1)
			first = false
		}
		rd := bufio.NewReader(resp.Body)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				break
			}
			if v, ok := strings.CutPrefix(line, "id: "); ok {
				if seq, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
					book.arrived(p.agreement, seq, time.Now(), kindStream)
				}
			}
		}
		resp.Body.Close()
	}
}

// poll keeps one long poll of the feed held on p's room (GET …/events
// after the last seq it saw, Prefer: wait=60, sent again at once after each
// answer) and notes when each event arrives.
func (b *bench) poll(ctx context.Context, c *http.Client, p *participant, book *wakeBook) {
	var last int64
	first := true
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.eventsURL+"?after="+strconv.FormatInt(last, 10), nil)
		req.Header.Set("Authorization", "Consensus-Participant "+p.token)
		req.Header.Set("Prefer", "wait=60")
		if first {
			book.ready.Add(1)
			first = false
		}
		resp, err := c.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				book.fail("poll: " + err.Error())
				time.Sleep(time.Second)
			}
			continue
		}
		at := time.Now()
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			book.fail(fmt.Sprintf("poll: %d", resp.StatusCode))
			time.Sleep(time.Second)
			continue
		}
		var page struct {
			Events []struct {
				Seq int64 `json:"seq"`
			} `json:"events"`
			Next int64 `json:"next"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			book.fail("poll: " + err.Error())
			continue
		}
		for _, e := range page.Events {
			book.arrived(p.agreement, e.Seq, at, kindPoll)
		}
		last = max(last, page.Next)
	}
}

// postOne appends one comment to a as its next participant with events left.
func (b *bench) postOne(ctx context.Context, a *agreement, book *wakeBook) error {
	p := a.nextParticipant()
	if p == nil {
		return fmt.Errorf("room of agreement %d: no event slots left", a.index+1)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.eventsURL, bytes.NewReader(a.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Consensus-Participant "+p.token)
	req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-%s-post-%d", b.world.runID, b.world.keys.Add(1)))
	var conn postConn
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), conn.trace()))
	t0 := time.Now()
	resp, err := b.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	done := time.Now()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("%d", resp.StatusCode)
	}
	var ev struct {
		Event struct {
			Seq int64 `json:"seq"`
		} `json:"event"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil || ev.Event.Seq == 0 {
		return fmt.Errorf("append answer without seq: %.100s", raw)
	}
	a.stored.Add(1)
	book.posted(a, ev.Event.Seq, t0, done)
	if took := done.Sub(t0); took > time.Second {
		b.cfg.logf("   a post took %s: %s", took.Round(time.Millisecond), conn.since(t0))
	}
	return nil
}

// postConn is how a post's request got its connection and its answer,
// for a post that took long.
type postConn struct {
	mu                          sync.Mutex
	reused                      bool
	connected, wrote, firstByte time.Time
}

func (c *postConn) trace() *httptrace.ClientTrace {
	at := func(t *time.Time) { c.mu.Lock(); *t = time.Now(); c.mu.Unlock() }
	return &httptrace.ClientTrace{
		GotConn:              func(i httptrace.GotConnInfo) { c.mu.Lock(); c.reused = i.Reused; c.mu.Unlock(); at(&c.connected) },
		WroteRequest:         func(httptrace.WroteRequestInfo) { at(&c.wrote) },
		GotFirstResponseByte: func() { at(&c.firstByte) },
	}
}

func (c *postConn) since(t0 time.Time) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Sub(t0).Round(time.Millisecond).String()
	}
	return fmt.Sprintf("connection (reused %v) at %s, request written at %s, answer began at %s", c.reused, d(c.connected), d(c.wrote), d(c.firstByte))
}
