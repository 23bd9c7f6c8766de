package httpapi_test

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/servertest"
)

// Many listeners on one replica: event streams and held long polls of the
// feed, each participant holding two of each (the per-participant bound),
// five participants a room. Each wave posts once into every room; every
// listener of the room must receive the event. The test logs the heap and
// stack the listeners hold and the wake-up latency (from just before the
// post is sent to the moment the listener reads the event).
//
// CONSENSUS_LISTENERS sets the number of listeners (default 200: half
// streams, half polls; a multiple of 20); CONSENSUS_LISTEN_PREFILL the
// events each room holds before they attach (default 20);
// CONSENSUS_LISTEN_HEAPPROFILE and
// CONSENSUS_LISTEN_CPUPROFILE name files for a heap profile taken with the
// listeners attached and a CPU profile of the waves.
//
// The listeners' client side runs in this process too, as lean as it can:
// one goroutine and a 1 KiB reader per connection, no http.Transport. Its
// allocations are those of listeners_clients_test.go in the heap profile.
func TestManyListenersWakeOnPost(t *testing.T) {
	n := 200
	if v := os.Getenv("CONSENSUS_LISTENERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 20 || n%20 != 0 {
			t.Fatalf("CONSENSUS_LISTENERS=%q: want a multiple of 20", v)
		}
	}
	const perRoom, streamsPer, pollsPer = 5, 2, 2
	nRooms := n / (perRoom * (streamsPer + pollsPer))
	s := servertest.New(t, servertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	rooms := setUpListenerRooms(ctx, t, s, nRooms, perRoom)
	prefill := 20
	if v := os.Getenv("CONSENSUS_LISTEN_PREFILL"); v != "" {
		var err error
		if prefill, err = strconv.Atoi(v); err != nil || prefill < 0 || prefill > 200 {
			t.Fatalf("CONSENSUS_LISTEN_PREFILL=%q: want 0 to 200", v)
		}
	}
	// The rooms hold events before the listeners attach: a stream starts
	// with all of them, a poll's first answer with a page.
	unbooked := &wakes{sent: map[string]time.Time{}, done: map[string]time.Time{}, early: map[string][]time.Time{}}
	for i := range prefill {
		var pw sync.WaitGroup
		jobs := make(chan *listenRoom)
		for range 8 {
			pw.Go(func() {
				for r := range jobs {
					postToRoom(ctx, t, s, r, 100+i, unbooked)
				}
			})
		}
		for _, r := range rooms {
			jobs <- r
		}
		close(jobs)
		pw.Wait()
	}
	if t.Failed() {
		t.FailNow()
	}
	if os.Getenv("CONSENSUS_LISTEN_HEAPPROFILE") != "" {
		runtime.MemProfileRate = 4096 // back to the default once the profile is written
	}
	host := strings.TrimPrefix(s.URL, "http://")
	book := &wakes{sent: map[string]time.Time{}, done: map[string]time.Time{}, early: map[string][]time.Time{}}

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutinesBefore := runtime.NumGoroutine()

	lctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	peak := watchPeak(lctx)
	var ready atomic.Int64
	t0 := time.Now()
	for _, r := range rooms {
		for _, p := range r.parts {
			for range streamsPer {
				wg.Go(func() { listenStream(lctx, t, host, r, p, book, &ready) })
			}
			for range pollsPer {
				wg.Go(func() { listenPoll(lctx, t, host, r, p, book, &ready) })
			}
		}
	}
	// Streams count once their headers arrive; polls once their first
	// (immediate) answer arrived and the next, held, request is sent.
	for ready.Load() < int64(n) {
		if time.Since(t0) > 3*time.Minute {
			t.Fatalf("only %d of %d listeners attached in 3 minutes", ready.Load(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second) // the last polls reach the server and are held
	attach := time.Since(t0)

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	goroutines := runtime.NumGoroutine() - goroutinesBefore
	heap := int64(after.HeapInuse) - int64(before.HeapInuse)
	stack := int64(after.StackInuse) - int64(before.StackInuse)
	t.Logf("%d listeners (%d streams, %d polls) over %d rooms of %d events attached in %v", n, n/2, n/2, nRooms, prefill, attach.Round(time.Millisecond))
	t.Logf("per listener, client and server: heap %.1f KiB, stacks %.1f KiB, %.2f goroutines (one of them the client's)",
		float64(heap)/1024/float64(n), float64(stack)/1024/float64(n), float64(goroutines)/float64(n))
	if path := os.Getenv("CONSENSUS_LISTEN_HEAPPROFILE"); path != "" {
		writeProfile(t, path, "heap")
		runtime.MemProfileRate = 512 * 1024
	}

	if path := os.Getenv("CONSENSUS_LISTEN_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	const waves = 5
	for wave := range waves {
		want := book.count() + int64(nRooms*perRoom*(streamsPer+pollsPer))
		jobs := make(chan *listenRoom)
		var pw sync.WaitGroup
		for range 8 {
			pw.Go(func() {
				for r := range jobs {
					postToRoom(ctx, t, s, r, wave, book)
				}
			})
		}
		for _, r := range rooms {
			jobs <- r
		}
		close(jobs)
		pw.Wait()
		end := time.Now().Add(20 * time.Second)
		for book.count() < want && time.Now().Before(end) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := book.count(); got < want {
			t.Fatalf("wave %d: %d wake-ups of %d did not arrive within 20 s", wave, want-got, nRooms*perRoom*(streamsPer+pollsPer))
		}
	}
	lat := book.latencies()
	slices.Sort(lat)
	q := func(f float64) time.Duration { return lat[min(len(lat)-1, int(f*float64(len(lat))))] }
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("%d posts, %d wake-ups: p50 %v, p90 %v, p99 %v, worst %v (load average %s)", waves*nRooms, len(lat),
		q(0.5).Round(time.Millisecond), q(0.9).Round(time.Millisecond), q(0.99).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond),
		strings.Join(strings.Fields(string(load))[:3], " "))
	p := peak()
	t.Logf("peak heap+stacks in use while attaching and waking, over the start: %.1f MiB, %.1f KiB a listener",
		float64(p-int64(before.HeapInuse+before.StackInuse))/(1<<20), float64(p-int64(before.HeapInuse+before.StackInuse))/1024/float64(n))
	book.mu.Lock()
	ap, aa := slices.Clone(book.appends), slices.Clone(book.afterAnswer)
	book.mu.Unlock()
	slices.Sort(ap)
	slices.Sort(aa)
	t.Logf("the posts themselves: p50 %v, p99 %v; wake-ups counted from the post's answer: p50 %v, p99 %v",
		ap[len(ap)/2].Round(time.Millisecond), ap[min(len(ap)-1, len(ap)*99/100)].Round(time.Millisecond),
		aa[len(aa)/2].Round(time.Millisecond), aa[min(len(aa)-1, len(aa)*99/100)].Round(time.Millisecond))
	if want := waves * nRooms * perRoom * (streamsPer + pollsPer); len(lat) != want {
		t.Fatalf("%d wake-ups measured, want %d", len(lat), want)
	}
}

// watchPeak samples the heap and stacks in use every 50 ms until ctx
// ends; the function it returns reads the largest sum seen so far.
func watchPeak(ctx context.Context) func() int64 {
	var peak atomic.Int64
	go func() {
		var m runtime.MemStats
		for ctx.Err() == nil {
			runtime.ReadMemStats(&m)
			if v := int64(m.HeapInuse + m.StackInuse); v > peak.Load() {
				peak.Store(v)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return peak.Load
}

func writeProfile(t *testing.T, path, name string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
}
