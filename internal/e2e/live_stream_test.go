package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// sseClient reads one participant's stream over plain HTTP (the
// contract-validating client reads whole bodies), resuming with
// Last-Event-ID.
type sseClient struct {
	t      *testing.T
	a      *agent
	last   int64 // seq of the last event received
	status int
	resp   *http.Response
	lines  *bufio.Scanner
}

func newSSE(t *testing.T, a *agent, after int64) *sseClient {
	return &sseClient{t: t, a: a, last: after}
}

// open connects, resuming after c.last.
func (c *sseClient) open() error {
	req, err := http.NewRequest("GET", c.a.s.URL+c.a.s.agentPath(c.a.inv.InvitationID, "stream"), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Consensus-Participant "+c.a.token)
	req.Header.Set("Accept", "text/event-stream")
	if c.last > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(c.last, 10))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return err
	}
	c.status = resp.StatusCode
	if resp.StatusCode != 200 {
		resp.Body.Close()
		return fmt.Errorf("stream: HTTP %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") || resp.Header.Get("Cache-Control") != "no-store" {
		resp.Body.Close()
		return fmt.Errorf("stream headers: %q %q", ct, resp.Header.Get("Cache-Control"))
	}
	c.resp, c.lines = resp, bufio.NewScanner(resp.Body)
	c.lines.Buffer(make([]byte, 64<<10), 1<<20)
	return nil
}

func (c *sseClient) close() {
	if c.resp != nil {
		c.resp.Body.Close()
		c.resp = nil
	}
}

// sseMessage is one message of the stream.
type sseMessage struct {
	id, event string
	data      map[string]any
}

// next returns the next message, skipping comments.
func (c *sseClient) next() (sseMessage, error) {
	var m sseMessage
	for c.lines.Scan() {
		line := c.lines.Text()
		switch {
		case line == "":
			if m.event != "" {
				return m, nil
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			m.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			m.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &m.data); err != nil {
				return m, err
			}
		default:
			return m, fmt.Errorf("unexpected stream line %q", line)
		}
	}
	if err := c.lines.Err(); err != nil {
		return m, err
	}
	return m, errors.New("stream ended")
}

// TestLiveStreamAcrossReplicas: a stream on replica one receives every
// event posted on replica two in order with id = seq; disconnected at
// random points, Last-Event-ID resumes with nothing lost or repeated. The
// feed then pages through all 1,000 events.
func TestLiveStreamAcrossReplicas(t *testing.T) {
	t.Parallel()
	const posters, each = 10, 100 // 1,000 events
	lr := startLiveRoom(t, posters)
	reader := lr.on1[0]

	var mu sync.Mutex
	posted := map[int64]time.Time{} // seq → when its POST started
	var postErr error
	stop, stopped := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-stopped }() // no post after the test ends
	go func() {
		defer close(stopped)
		seq := int64(0) // one poster: the k-th post is seq k
		for i := range each {
			for p, a := range lr.on2 {
				select {
				case <-stop:
					return
				default:
				}
				seq++
				mu.Lock()
				posted[seq] = time.Now()
				mu.Unlock()
				r := a.post(fmt.Sprintf("stream-%02d-%04d", p, i), "comment", fmt.Sprintf("event %d of %d", i, p))
				if r.StatusCode != 201 {
					mu.Lock()
					postErr = fmt.Errorf("post: %d %s", r.StatusCode, r.body)
					mu.Unlock()
					return
				}
			}
		}
	}()

	rng := rand.New(rand.NewPCG(11, 500))
	c := newSSE(t, reader, 0)
	if err := c.open(); err != nil {
		t.Fatal(err)
	}
	var latencies []time.Duration
	received, disconnects := int64(0), 0
	cut := 1 + rng.IntN(60)
	deadline := time.Now().Add(5 * time.Minute) // a loaded two-core machine posts slowly
	for received < posters*each {
		if time.Now().After(deadline) {
			t.Fatalf("only %d events after 5 minutes", received)
		}
		m, err := c.next()
		if err != nil {
			t.Fatalf("after seq %d: %v", c.last, err)
		}
		switch m.event {
		case "room.outcome":
			if m.data["status"] != "pending" {
				t.Fatalf("outcome %v", m.data)
			}
			continue
		case "room.event":
		default:
			t.Fatalf("unexpected message %q", m.event)
		}
		seq := int64(m.data["seq"].(float64))
		if m.id != strconv.FormatInt(seq, 10) || seq != c.last+1 {
			t.Fatalf("message id %q seq %d after %d: lost or repeated", m.id, seq, c.last)
		}
		c.last, received = seq, received+1
		mu.Lock()
		if start, ok := posted[seq]; ok {
			latencies = append(latencies, time.Since(start))
		}
		mu.Unlock()
		if cut--; cut == 0 {
			c.close() // a forced disconnect, then resume
			disconnects++
			if err := c.open(); err != nil {
				t.Fatal(err)
			}
			cut = 1 + rng.IntN(60)
		}
	}
	c.close()
	mu.Lock()
	if postErr != nil {
		t.Fatal(postErr)
	}
	mu.Unlock()
	t.Logf("%d events streamed with %d disconnects", received, disconnects)
	if disconnects < 10 {
		t.Fatalf("only %d disconnects", disconnects)
	}
	report(t, "stream (from the POST start on the other replica)", latencies)

	// the feed pages through the same 1,000 events, chained
	after, prev, pages := int64(0), strings.Repeat("0", 64), 0
	for {
		r := reader.held("events", "?limit=500&after="+strconv.FormatInt(after, 10), nil)
		expect(t, r, 200, "")
		var page struct {
			Events []struct {
				Seq  int64  `json:"seq"`
				Prev string `json:"prev"`
				Hash string `json:"hash"`
			} `json:"events"`
			Next      int64  `json:"next"`
			ChainHead string `json:"chainHead"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Events) == 0 {
			if after != posters*each || page.Next != after || page.ChainHead != prev {
				t.Fatalf("feed ended at %d (next %d, head %s, last hash %s)", after, page.Next, page.ChainHead, prev)
			}
			break
		}
		pages++
		for _, e := range page.Events {
			if e.Seq != after+1 || e.Prev != prev {
				t.Fatalf("feed: seq %d after %d, prev %s want %s", e.Seq, after, e.Prev, prev)
			}
			after, prev = e.Seq, e.Hash
		}
		if page.Next != after {
			t.Fatalf("next %d, last seq %d", page.Next, after)
		}
	}
	if pages != 2 {
		t.Fatalf("%d pages of 500", pages)
	}
	// the default page is 100
	r := reader.held("events", "?after=10", nil)
	if evs := r.json(t)["events"].([]any); len(evs) != 100 || evs[0].(map[string]any)["seq"].(float64) != 11 {
		t.Fatalf("default page: %d events", len(evs))
	}
}
