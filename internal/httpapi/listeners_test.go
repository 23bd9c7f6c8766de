package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/fwtest"
	"github.com/consensus-md/consensus/internal/ingest"
	"github.com/consensus-md/consensus/internal/live"
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
// allocations are those of this file in the heap profile.
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

type listenRoom struct {
	id     string
	parts  []*listenPart
	digest string
	rev    int
}

type listenPart struct {
	inv, pid, token string
}

// setUpListenerRooms creates nRooms agreements of perRoom participants and
// joins every participant (exchange and claim).
func setUpListenerRooms(ctx context.Context, t *testing.T, s *servertest.Server, nRooms, perRoom int) []*listenRoom {
	t.Helper()
	rooms := make([]*listenRoom, nRooms)
	byInv := map[string]*listenPart{}
	for i := range rooms {
		a := servertest.Agreement{Title: fmt.Sprintf("Listeners %d", i), Objective: "Wake every listener.", Deadline: time.Now().Add(24 * time.Hour)}
		for j := range perRoom {
			a.Participants = append(a.Participants, servertest.Participant{
				DisplayName: fmt.Sprintf("P%d", j), Kind: "agent", Email: fmt.Sprintf("p%d.r%d@example.test", j, i), Required: true})
		}
		c, err := s.CreateAgreement(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		r := &listenRoom{id: c.AgreementID}
		for _, p := range c.Participants {
			lp := &listenPart{inv: p.InvitationID, pid: p.ParticipantID}
			r.parts = append(r.parts, lp)
			byInv[p.InvitationID] = lp
		}
		rooms[i] = r
	}
	if err := s.WaitForMail(ctx, nRooms*perRoom); err != nil {
		t.Fatal(err)
	}
	invs := map[string]*envelope.Invitation{}
	for _, sub := range []string{"new", "cur"} {
		files, _ := filepath.Glob(filepath.Join(s.Maildir, sub, "*"))
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			inv, err := ingest.ParseMessageBytes(raw, envelope.Policy{Origin: s.URL, AllowHTTPLoopback: true})
			if err != nil {
				t.Fatal(err)
			}
			invs[inv.InvitationID] = inv
		}
	}
	roomOf := map[*listenPart]*listenRoom{}
	for _, r := range rooms {
		for _, p := range r.parts {
			roomOf[p] = r
		}
	}
	jobs := make(chan *listenPart)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range 8 {
		wg.Go(func() {
			for p := range jobs {
				inv := invs[p.inv]
				if inv == nil {
					t.Errorf("no invitation email for %s", p.inv)
					continue
				}
				var ex struct {
					SessionToken   string `json:"sessionToken"`
					RevisionDigest string `json:"revisionDigest"`
					RevisionNumber int    `json:"revisionNumber"`
				}
				if err := postJSON(ctx, inv.ExchangeURL, "", map[string]string{"secret": inv.Secret}, &ex); err != nil {
					t.Error(err)
					continue
				}
				var cl struct {
					ParticipantToken string `json:"participantToken"`
				}
				if err := postJSON(ctx, inv.ClaimURL, "Consensus-Session "+ex.SessionToken, map[string]string{"emailProof": inv.EmailProof, "inbox": inv.Inbox}, &cl); err != nil {
					t.Error(err)
					continue
				}
				mu.Lock()
				p.token = cl.ParticipantToken
				r := roomOf[p]
				r.digest, r.rev = ex.RevisionDigest, ex.RevisionNumber
				mu.Unlock()
			}
		})
	}
	for p := range byInv {
		jobs <- byInv[p]
	}
	close(jobs)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return rooms
}

func postJSON(ctx context.Context, url, auth string, body any, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, answer)
	}
	return json.Unmarshal(answer, out)
}

// wakes books when each post was sent and when each listener read it.
type wakes struct {
	mu   sync.Mutex
	sent map[string]time.Time // room/seq → before the post was sent
	done map[string]time.Time // room/seq → when its answer arrived
	// afterAnswer are the wake-ups counted from the post's answer instead.
	afterAnswer []time.Duration
	early       map[string][]time.Time // arrivals before their post's seq was known
	lat         []time.Duration
	n           atomic.Int64
	// appends are the posts' own latencies, from sending to the answer.
	appends []time.Duration
}

func (w *wakes) arrived(room string, seq int64, at time.Time) {
	k := room + "/" + strconv.FormatInt(seq, 10)
	w.mu.Lock()
	defer w.mu.Unlock()
	if t0, ok := w.sent[k]; ok {
		w.lat = append(w.lat, at.Sub(t0))
		w.afterAnswer = append(w.afterAnswer, at.Sub(w.done[k]))
	} else {
		w.early[k] = append(w.early[k], at)
	}
	w.n.Add(1)
}

func (w *wakes) posted(room string, seq int64, t0, answered time.Time) {
	k := room + "/" + strconv.FormatInt(seq, 10)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sent[k], w.done[k] = t0, answered
	w.appends = append(w.appends, answered.Sub(t0))
	for _, at := range w.early[k] {
		w.lat = append(w.lat, at.Sub(t0))
		w.afterAnswer = append(w.afterAnswer, at.Sub(answered))
	}
	delete(w.early, k)
}

func (w *wakes) count() int64 { return w.n.Load() }

func (w *wakes) latencies() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.lat)
}

var postKeys atomic.Int64

func postToRoom(ctx context.Context, t *testing.T, s *servertest.Server, r *listenRoom, wave int, book *wakes) {
	p := r.parts[wave%len(r.parts)]
	body, _ := json.Marshal(map[string]any{"action": "comment", "body": fmt.Sprintf("Wave %d.", wave), "revision": r.rev, "digest": r.digest})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/api/v1/agent/invitations/"+p.inv+"/events", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Consensus-Participant "+p.token)
	req.Header.Set("Idempotency-Key", "listen-"+strconv.FormatInt(postKeys.Add(1), 10))
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("post: %v", err)
		return
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var ev struct {
		Event struct {
			Seq int64 `json:"seq"`
		} `json:"event"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &ev) != nil || ev.Event.Seq == 0 {
		t.Errorf("post: %d %.200s", resp.StatusCode, raw)
		return
	}
	book.posted(r.id, ev.Event.Seq, t0, time.Now())
}

// sendGet sends a GET of path on conn.
func sendGet(conn net.Conn, host, path, token string, extra ...string) error {
	var b strings.Builder
	b.WriteString("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Consensus-Participant " + token + "\r\n")
	for i := 0; i+1 < len(extra); i += 2 {
		b.WriteString(extra[i] + ": " + extra[i+1] + "\r\n")
	}
	b.WriteString("\r\n")
	_, err := io.WriteString(conn, b.String())
	return err
}

// listenStream holds one stream of p's room open until ctx ends and books
// every event it reads.
func listenStream(ctx context.Context, t *testing.T, host string, r *listenRoom, p *listenPart, book *wakes, ready *atomic.Int64) {
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Errorf("stream: %v", err)
		return
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := sendGet(conn, host, "/api/v1/agent/invitations/"+p.inv+"/stream", p.token, "Accept", "text/event-stream"); err != nil {
		t.Errorf("stream: %v", err)
		return
	}
	br := bufio.NewReaderSize(conn, 1024)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		if ctx.Err() == nil {
			t.Errorf("stream: %v %v", err, resp)
		}
		return
	}
	ready.Add(1)
	lines := bufio.NewReaderSize(resp.Body, 256)
	for {
		line, err := lines.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			for err == bufio.ErrBufferFull { // a long data line: skip it
				_, err = lines.ReadSlice('\n')
			}
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("stream ended: %v", err)
			}
			return
		}
		if v, ok := bytes.CutPrefix(line, []byte("id: ")); ok {
			if seq, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64); err == nil {
				book.arrived(r.id, seq, time.Now())
			}
		}
	}
}

// listenPoll keeps one long poll of p's feed held (Prefer: wait=60, sent
// again at once after each answer) and books every event it reads.
func listenPoll(ctx context.Context, t *testing.T, host string, r *listenRoom, p *listenPart, book *wakes, ready *atomic.Int64) {
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Errorf("poll: %v", err)
		return
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	br := bufio.NewReaderSize(conn, 1024)
	var last int64 = -1 // the first request asks for the room so far, unheld
	for {
		var prefer []string
		if last >= 0 {
			prefer = []string{"Prefer", "wait=60"}
		}
		if err := sendGet(conn, host, "/api/v1/agent/invitations/"+p.inv+"/events?after="+strconv.FormatInt(max(last, 0), 10), p.token, prefer...); err != nil {
			if ctx.Err() == nil {
				t.Errorf("poll: %v", err)
			}
			return
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("poll: %v", err)
			}
			return
		}
		at := time.Now()
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			if ctx.Err() == nil {
				t.Errorf("poll: %d %v %.200s", resp.StatusCode, err, body)
			}
			return
		}
		var page struct {
			Events []struct {
				Seq int64 `json:"seq"`
			} `json:"events"`
			Next int64 `json:"next"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Errorf("poll: %v", err)
			return
		}
		if last >= 0 {
			for _, e := range page.Events {
				book.arrived(r.id, e.Seq, at)
			}
		} else {
			ready.Add(1) // the first answer is the room so far; the next request waits
		}
		last = max(page.Next, 0)
	}
}

// A revocation on another replica ends a participant's open stream and
// answers its held long poll of the feed 401, however the events reach
// them.
func TestRevocationEndsStreamAndPoll(t *testing.T) {
	t.Parallel()
	s := servertest.New(t, servertest.Options{})
	other := servertest.New(t, s.ReplicaOptions())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := setUpListenerRooms(ctx, t, s, 1, 2)[0]
	p := r.parts[0]
	host := strings.TrimPrefix(s.URL, "http://")

	stream, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if err := sendGet(stream, host, "/api/v1/agent/invitations/"+p.inv+"/stream", p.token, "Accept", "text/event-stream"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(stream), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %v %v", err, resp)
	}
	streamEnded := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); streamEnded <- err }()

	poll, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer poll.Close()
	if err := sendGet(poll, host, "/api/v1/agent/invitations/"+p.inv+"/events?after=0", p.token, "Prefer", "wait=30"); err != nil {
		t.Fatal(err)
	}
	polled := make(chan *http.Response, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(poll), nil)
		if err != nil {
			t.Errorf("poll: %v", err)
		}
		polled <- resp
	}()
	time.Sleep(300 * time.Millisecond) // both are held
	select {
	case resp := <-polled:
		t.Fatalf("the poll answered before any change: %v", resp)
	default:
	}

	fwtest.Revoke(t, other, p.pid)
	select {
	case resp := <-polled:
		if resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the held poll answered %v after the revocation, want 401", resp)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held poll outlived the revocation by 10 s")
	}
	select {
	case err := <-streamEnded:
		if err != nil {
			t.Fatalf("the stream ended badly: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream outlived the revocation by 10 s")
	}
}

// A post committed after a held read's credential lookup read the room,
// and heard before the read joined the hub, answers the read at once: it
// is not left waiting for a change that already came.
func TestChangeBeforeJoiningAnswersAHeldRead(t *testing.T) {
	t.Parallel()
	// The hook is injected before the room exists: it acts once the room
	// is set up (room), on the first held read of that room.
	var room atomic.Pointer[uuid.UUID]
	var hook func(*live.Hub)
	s := servertest.New(t, servertest.Options{BeforeJoin: func(agreementID uuid.UUID, hub *live.Hub) {
		if id := room.Load(); id != nil && *id == agreementID {
			hook(hub)
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := setUpListenerRooms(ctx, t, s, 1, 2)[0]
	reader, poster := r.parts[0], r.parts[1]
	var once sync.Once
	hook = func(hub *live.Hub) {
		once.Do(func() {
			mark := hub.Mark()
			body, _ := json.Marshal(map[string]any{"action": "comment", "body": "Before the join.", "revision": r.rev, "digest": r.digest})
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/api/v1/agent/invitations/"+poster.inv+"/events", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Consensus-Participant "+poster.token)
			req.Header.Set("Idempotency-Key", "before-the-join")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("post: %v", err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Errorf("post: %d", resp.StatusCode)
				return
			}
			for !hub.ChangedSince(uuid.MustParse(r.id), mark) {
				if ctx.Err() != nil {
					t.Error("the hub never heard of the post")
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	id := uuid.MustParse(r.id)
	room.Store(&id) // after hook is set: the atomic publishes it
	host := strings.TrimPrefix(s.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if err := sendGet(conn, host, "/api/v1/agent/invitations/"+reader.inv+"/events?after=0", reader.token, "Prefer", "wait=20"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	if took := time.Since(start); resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), "Before the join.") || took > 10*time.Second {
		t.Fatalf("the held read answered %d after %s: %.300s", resp.StatusCode, took, raw)
	}
}
