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
	"strconv"
	"strings"
	"sync"
	"time"
)

// The listener phase's clients: one event stream, one long poll of the
// feed, and one post, each noting in the wake-up book what it saw.

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
