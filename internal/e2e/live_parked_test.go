package e2e

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLiveHoldStaysInNetHTTPWhenParkingIsOff: with
// CONSENSUS_PARKED_CONNECTIONS=off a held read over HTTP/1.1 waits in its
// handler, in net/http's goroutine, as over HTTP/2, and is answered as
// with parking on (TestLiveHoldLeavesNetHTTP): woken by a post on the
// other replica, then held again on the same connection to its wait; a
// stream is served and woken too.
//
// Not parallel: it finds its waiting goroutine among the process's, where
// the parallel TestLiveHoldLeavesNetHTTP must find none in net/http's.
func TestLiveHoldStaysInNetHTTPWhenParkingIsOff(t *testing.T) {
	lr := startLiveRoom(t, 2, map[string]string{"CONSENSUS_PARKED_CONNECTIONS": "off"})
	a, b := lr.on2[0], lr.on1[1]
	conn, err := net.Dial("tcp", strings.TrimPrefix(lr.two.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	exchange := func(action, query string, h map[string]string, during func()) (*http.Response, string) {
		t.Helper()
		writeGet(t, conn, a, action, query, h)
		during()
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(body)
	}

	inFlight(t, lr.two, "0")
	resp, body := exchange("room", "", map[string]string{"If-None-Match": roomETagOf(t, a), "Prefer": "wait=30"}, func() {
		inFlight(t, lr.two, "1")
		if !awaitsInNetHTTP(t) {
			t.Error("with parking off, a held read waits outside net/http")
		}
		expect(t, b.post("parking-off-1", "comment", "wakes the held read"), 201, "")
	})
	if resp.StatusCode != 200 || resp.Close || resp.Header.Get("Preference-Applied") != "wait=30" || !strings.Contains(body, "wakes the held read") {
		t.Fatalf("woken room: %d, close %v, %v: %.300s", resp.StatusCode, resp.Close, resp.Header, body)
	}
	resp, body = exchange("events", "?after=1", map[string]string{"Prefer": "wait=1"}, func() {})
	if resp.StatusCode != 200 || resp.Close || !strings.Contains(body, `"events":[]`) {
		t.Fatalf("feed held to its wait on the same connection: %d, close %v, %s", resp.StatusCode, resp.Close, body)
	}

	stream := newSSE(t, a, 1)
	if err := stream.open(); err != nil {
		t.Fatal(err)
	}
	defer stream.close()
	if m, err := stream.next(); err != nil || m.event != "room.outcome" {
		t.Fatalf("first message %v %v", m, err)
	}
	expect(t, b.post("parking-off-2", "comment", "wakes the stream"), 201, "")
	if m, err := stream.next(); err != nil || m.event != "room.event" || m.id != "2" {
		t.Fatalf("woken stream: %+v %v", m, err)
	}
}
