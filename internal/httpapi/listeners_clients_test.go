package httpapi_test

// The listeners' client side of the many-listeners test: one raw
// connection each, holding a stream or a long poll of the feed.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

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
