package e2e

// Held reads and streams on the connection: counted in flight, sharing one
// HTTP/1.1 keep-alive connection, and outlasting the server's timeouts.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
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

// TestLiveStreamCountsInFlight: over HTTP/1.1 a stream is an answer of no
// stated length that runs until the client leaves. It counts as a request
// in flight until it ends, sends what the room gains, and frees its place
// at once when the client leaves.
func TestLiveStreamCountsInFlight(t *testing.T) {
	t.Parallel()
	lr := startLiveRoom(t, 2)
	a, b := lr.on2[0], lr.on1[1]
	inFlight(t, lr.two, "0")
	stream := newSSE(t, a, 0)
	if err := stream.open(); err != nil {
		t.Fatal(err)
	}
	if stream.resp.ContentLength != -1 {
		t.Fatalf("a stream states a length: %d", stream.resp.ContentLength)
	}
	if m, err := stream.next(); err != nil || m.event != "room.outcome" {
		t.Fatalf("first message %v %v", m, err)
	}
	inFlight(t, lr.two, "1")
	expect(t, b.post("stream-in-flight-1", "comment", "after the first page"), 201, "")
	if m, err := stream.next(); err != nil || m.event != "room.event" || m.id != "1" {
		t.Fatalf("woken stream: %+v %v", m, err)
	}
	stream.close()
	inFlight(t, lr.two, "0")
}

// TestLiveHoldOnOneConnection: held requests over HTTP/1.1 share one
// keep-alive connection as plain reads do. On one raw connection: a held
// room read woken by a post on the other replica answers 200 with the
// room, framed by Content-Length; the same connection then carries a held
// feed read that ends at its wait, a 304 with no body, and after a pause a
// plain read. The held request counts in flight while it waits, and a
// client leaving mid-wait ends it. A request pipelined behind a held one
// is not lost silently.
func TestLiveHoldOnOneConnection(t *testing.T) {
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

// roomETagOf is a's room's current ETag.
func roomETagOf(t *testing.T, a *agent) string {
	t.Helper()
	etag := a.room().Header.Get("ETag")
	if etag == "" {
		t.Fatal("the room has no ETag")
	}
	return etag
}

// TestLiveWaitsOutlastServerTimeouts: held reads and streams wait in their
// handlers, so they must outlast the server's read and write timeouts (1 s
// and 2 s here), which bound every other request: a held room read and a
// stream opened before those timeouts pass are both still served, and
// woken, by a post made after them. The wait past the timeouts is what is
// tested, so it is a sleep.
func TestLiveWaitsOutlastServerTimeouts(t *testing.T) {
	t.Parallel()
	lr := startLiveRoom(t, 2, map[string]string{
		"CONSENSUS_READ_HEADER_TIMEOUT": "1s", "CONSENSUS_READ_TIMEOUT": "1s", "CONSENSUS_WRITE_TIMEOUT": "2s",
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
