package main

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The listener phase's bookkeeping: its result, and the book of posts sent
// and listener wake-ups from which the p50, p99 and worst are taken.

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
