package main

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The listener phase: attaching the streams and long polls, the measured
// waves of posts, and the append rounds against pgbench with them attached.

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
