package e2e

// Held reads and streams on the connection: leaving net/http, counted in
// flight, sharing one HTTP/1.1 keep-alive connection, and outlasting the
// server's timeouts.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// inFlight waits until the replica's metrics count want requests in flight.
func inFlight(t *testing.T, s *server, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(s.OpsURL + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), "\nconsensus_http_requests_in_flight "+want+"\n") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("never %s requests in flight", want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLiveStreamLeavesNetHTTP: over HTTP/1.1 a stream's body runs until
// the connection closes (no chunked framing), so the replica can take the
// connection out of net/http once the first page is sent. The stream still
// counts as a request in flight until it ends, sends what the room gains,
// and frees its place at once when the client leaves.
func TestLiveStreamLeavesNetHTTP(t *testing.T) {
	t.Parallel()
	lr := startLiveRoom(t, 2)
	a, b := lr.on2[0], lr.on1[1]
	inFlight(t, lr.two, "0")
	stream := newSSE(t, a, 0)
	if err := stream.open(); err != nil {
		t.Fatal(err)
	}
	if te := stream.resp.TransferEncoding; len(te) != 0 || stream.resp.ContentLength != -1 || stream.resp.Close != true {
		t.Fatalf("stream framing: Transfer-Encoding %v, Content-Length %d, close %v", te, stream.resp.ContentLength, stream.resp.Close)
	}
	if m, err := stream.next(); err != nil || m.event != "room.outcome" {
		t.Fatalf("first message %v %v", m, err)
	}
	inFlight(t, lr.two, "1")
	expect(t, b.post("leaves-net-http-1", "comment", "after the first page"), 201, "")
	if m, err := stream.next(); err != nil || m.event != "room.event" || m.id != "1" {
		t.Fatalf("woken stream: %+v %v", m, err)
	}
	stream.close()
	inFlight(t, lr.two, "0")
}

// TestLiveHoldLeavesNetHTTP: a held request over HTTP/1.1 waits outside
// net/http, and its answer and connection are as net/http's would be. On
// one raw keep-alive connection: a held room read woken by a post on the
// other replica answers 200 with the room, framed by Content-Length; the
// same connection then carries a held feed read that ends at its wait, a
// 304 with no body, and after a pause a plain read. The held request
// counts in flight while it waits, and a client leaving mid-wait ends it.
// A request pipelined behind a held one is not lost silently: the held
// answer says Connection: close.
func TestLiveHoldLeavesNetHTTP(t *testing.T) {
	t.Parallel()
	lr := startLiveRoom(t, 2)
	a, b := lr.on2[0], lr.on1[1]
	conn, err := net.Dial("tcp", strings.TrimPrefix(lr.two.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	send := func(action, query string, h map[string]string) {
		t.Helper()
		writeGet(t, conn, a, action, query, h)
	}
	receive := func() (*http.Response, []byte) {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}

	etag := a.room().Header.Get("ETag")
	inFlight(t, lr.two, "0")
	send("room", "", map[string]string{"If-None-Match": etag, "Prefer": "wait=30"})
	inFlight(t, lr.two, "1")
	// The replica runs in this process: its waiting goroutine is not
	// net/http's.
	if awaitsInNetHTTP(t) {
		t.Fatal("a held request waits in net/http's goroutine")
	}
	expect(t, b.post("hold-leaves-1", "comment", "wakes the held read"), 201, "")
	resp, body := receive()
	if resp.StatusCode != 200 || resp.Close || resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) != 0 {
		t.Fatalf("woken room: %d, close %v, Content-Length %d for %d bytes, Transfer-Encoding %v", resp.StatusCode, resp.Close, resp.ContentLength, len(body), resp.TransferEncoding)
	}
	for _, h := range []string{"ETag", "X-Request-Id", "Date", "Content-Type", "Preference-Applied", "X-Content-Type-Options"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("the woken room's answer lacks %s", h)
		}
	}
	var room struct {
		Events []struct{ Seq int } `json:"events"`
	}
	if err := json.Unmarshal(body, &room); err != nil || len(room.Events) != 1 || resp.Header.Get("ETag") == etag {
		t.Fatalf("woken room: %v, %s", err, body)
	}
	inFlight(t, lr.two, "0")

	send("events", "?after=1", map[string]string{"Prefer": "wait=1"})
	resp, body = receive()
	if resp.StatusCode != 200 || resp.Close || !strings.Contains(string(body), `"events":[]`) {
		t.Fatalf("feed held to its wait on the same connection: %d, close %v, %s", resp.StatusCode, resp.Close, body)
	}
	send("room", "", map[string]string{"If-None-Match": resp.Header.Get("ETag") + `, ` + roomETagOf(t, a), "Prefer": "wait=1"})
	resp, body = receive()
	if resp.StatusCode != 304 || len(body) != 0 || resp.Header.Get("Content-Length") != "" || resp.Header.Get("Content-Type") != "" || resp.Close {
		t.Fatalf("room held to its wait: %d, %q, headers %v", resp.StatusCode, body, resp.Header)
	}
	time.Sleep(1500 * time.Millisecond) // the connection waits for its next request
	send("room", "", nil)
	if resp, body = receive(); resp.StatusCode != 200 || len(body) == 0 {
		t.Fatalf("a plain read after the pause: %d", resp.StatusCode)
	}

	// A client that leaves mid-wait ends its request.
	send("room", "", map[string]string{"If-None-Match": roomETagOf(t, a), "Prefer": "wait=30"})
	inFlight(t, lr.two, "1")
	conn.Close()
	inFlight(t, lr.two, "0")
	// Its log line says the client closed the request (499), as a request
	// whose client left during a database call is logged.
	if !strings.Contains(lr.two.Logs.String(), `"route":"/api/v1/agent/invitations/{invitationId}/room","status":499`) {
		t.Error("no request log line with status 499 for the room read whose client left")
	}

	// Pipelined behind a held request.
	conn2, err := net.Dial("tcp", strings.TrimPrefix(lr.two.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	conn, br = conn2, bufio.NewReader(conn2)
	send("room", "", map[string]string{"If-None-Match": roomETagOf(t, a), "Prefer": "wait=1"})
	send("room", "", nil)
	if resp, _ = receive(); resp.StatusCode != 304 {
		t.Fatalf("held answer with a request behind it: %d", resp.StatusCode)
	}
	// Either the held answer closes the connection, or the request behind
	// it is answered on it.
	if !resp.Close {
		if resp, body = receive(); resp.StatusCode != 200 || len(body) == 0 {
			t.Fatalf("the request pipelined behind a held one: %d", resp.StatusCode)
		}
	} else if n, err := br.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("after Connection: close the connection sent %d bytes, %v", n, err)
	}
}

// awaitsInNetHTTP reports whether the held reads waiting in this process
// (in await, live.go) wait in net/http's goroutines, once one waits. It
// fails when some do and some do not.
func awaitsInNetHTTP(t *testing.T) bool {
	t.Helper()
	// In flight, the request may not wait yet: look again.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var stacks bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&stacks, 2)
		inside, outside := 0, 0
		for _, g := range strings.Split(stacks.String(), "\n\n") {
			if strings.Contains(g, "httpapi.(*Server).await(") {
				if strings.Contains(g, "net/http.(*conn).serve") {
					inside++
				} else {
					outside++
				}
			}
		}
		switch {
		case inside > 0 && outside > 0:
			t.Fatalf("%d held reads wait in net/http's goroutines, %d outside", inside, outside)
		case inside+outside > 0:
			return inside > 0
		case time.Now().After(deadline):
			t.Fatal("no goroutine waits in await (live.go)")
		}
	}
}

// roomETagOf is a's room's current ETag.
func roomETagOf(t *testing.T, a *agent) string {
	t.Helper()
	etag := a.room().Header.Get("ETag")
	if etag == "" {
		t.Fatal("the room has no ETag")
	}
	return etag
}

// TestLiveWaitsOutlastServerTimeouts: held reads and streams must outlast
// the server's read and write timeouts (1 s and 2 s here), which bound
// every other request, whether they wait outside net/http (parked) or in
// their handlers (CONSENSUS_PARKED_CONNECTIONS=off): a held room read and a
// stream opened before those timeouts pass are both still served, and
// woken, by a post made after them. The wait past the timeouts is what is
// tested, so it is a sleep.
func TestLiveWaitsOutlastServerTimeouts(t *testing.T) {
	t.Parallel()
	for _, parked := range []string{"on", "off"} {
		t.Run("parked "+parked, func(t *testing.T) {
			t.Parallel()
			waitsOutlastServerTimeouts(t, parked)
		})
	}
}

func waitsOutlastServerTimeouts(t *testing.T, parked string) {
	lr := startLiveRoom(t, 2, map[string]string{
		"CONSENSUS_READ_HEADER_TIMEOUT": "1s", "CONSENSUS_READ_TIMEOUT": "1s", "CONSENSUS_WRITE_TIMEOUT": "2s",
		"CONSENSUS_PARKED_CONNECTIONS": parked,
	})
	a, b := lr.on2[0], lr.on1[1]
	stream := newSSE(t, a, 0)
	if err := stream.open(); err != nil {
		t.Fatal(err)
	}
	defer stream.close()
	if m, err := stream.next(); err != nil || m.event != "room.outcome" {
		t.Fatalf("first message %v %v", m, err)
	}
	etag := roomETagOf(t, a)
	held := make(chan *response, 1)
	go func() { held <- a.held("room", "", map[string]string{"If-None-Match": etag, "Prefer": "wait=20"}) }()
	inFlight(t, lr.two, "2")
	time.Sleep(3 * time.Second) // past both timeouts
	expect(t, b.post("outlasts-1", "comment", "after the server's timeouts"), 201, "")
	select {
	case r := <-held:
		expect(t, r, 200, "")
	case <-time.After(15 * time.Second):
		t.Fatal("the held read was not answered after the post")
	}
	if m, err := stream.next(); err != nil || m.event != "room.event" || m.id != "1" {
		t.Fatalf("the stream after the server's timeouts: %+v %v", m, err)
	}
}

// writeGet writes a's GET of action by hand on conn, as an HTTP/1.1 client
// keeping its connection would, with the extra headers h.
func writeGet(t *testing.T, conn net.Conn, a *agent, action, query string, h map[string]string) {
	t.Helper()
	var req strings.Builder
	fmt.Fprintf(&req, "GET %s%s HTTP/1.1\r\nHost: consensus.test\r\nAuthorization: Consensus-Participant %s\r\n", a.s.agentPath(a.inv.InvitationID, action), query, a.token)
	for k, v := range h {
		fmt.Fprintf(&req, "%s: %s\r\n", k, v)
	}
	req.WriteString("\r\n")
	if _, err := io.WriteString(conn, req.String()); err != nil {
		t.Fatal(err)
	}
}
