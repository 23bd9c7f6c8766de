package parked

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// reholdServer serves, as the daemon does, a handler whose /hold is a held
// read: it leaves net/http (detachHold) and is answered 20 ms later, 204
// with what the handler saw of the request in headers; /hold?now is
// answered at once, /hold?nothing writes nothing, and any other request
// is answered "plain". /hold is the only route that holds. It returns the
// address and how many requests net/http served (each makes its
// connection active).
func reholdServer(t *testing.T, readHeader time.Duration) (string, *atomic.Int64) {
	t.Helper()
	if !CanWatch() {
		t.Skip("no epoll set here: held requests stay in net/http")
	}
	var l *Listener
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen := func(h http.Header) {
			h.Set("X-Host", r.Host)
			h.Set("X-Host-Header", r.Header.Get("Host"))
			h.Set("X-Remote", r.RemoteAddr)
			h.Set("X-Extra", r.Header.Get("X-Extra"))
		}
		if r.URL.Path != "/hold" {
			_, _ = io.WriteString(w, "plain")
			return
		}
		switch r.URL.RawQuery {
		case "now":
			seen(w.Header())
			_, _ = io.WriteString(w, "now")
			return
		case "nothing":
			return
		}
		d := holdRequest(l, w, r)
		if d == nil {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		go func() {
			time.Sleep(20 * time.Millisecond)
			seen(d.Writer().Header())
			d.Writer().WriteHeader(http.StatusNoContent)
			d.Finish()
		}()
	})
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var served atomic.Int64
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: time.Minute, ConnState: func(c net.Conn, st http.ConnState) {
		if st == http.StateActive {
			served.Add(1)
		}
		l.ConnState(c, st)
	}}
	l = Listen(inner, Options{Idle: time.Minute, HeadWait: readHeader, Route: func(path string) http.Handler {
		if path == "/hold" {
			return handler
		}
		return nil
	}})
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return inner.Addr().String(), &served
}

// reholdConn is a client's connection, reading answers in order.
type reholdConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRehold(t *testing.T, addr string) *reholdConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &reholdConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (c *reholdConn) write(raw string) {
	c.t.Helper()
	if _, err := io.WriteString(c.c, raw); err != nil {
		c.t.Fatal(err)
	}
}

// answer reads the next answer, with its body.
func (c *reholdConn) answer() (*http.Response, string) {
	c.t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.t.Fatalf("reading an answer: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("reading an answer's body: %v", err)
	}
	return resp, string(body)
}

// closed reports whether the server closed the connection.
func (c *reholdConn) closed() bool {
	_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.br.ReadByte()
	return err == io.EOF
}

// get is a GET of path with headers (each a whole line), as raw HTTP/1.1.
func get(path string, headers ...string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + strings.Join(headers, "") + "\r\n"
}

// A long-poll client's next held read on its connection is served without
// net/http, over and over, and sees the request net/http would give it;
// an answer given at once leaves the connection open for the next.
func TestParkedHeldReadsAreServedHere(t *testing.T) {
	addr, served := reholdServer(t, 0)
	c := dialRehold(t, addr)
	c.write(get("/hold"))
	if resp, _ := c.answer(); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("first held read: %d", resp.StatusCode)
	}
	if n := served.Load(); n != 1 {
		t.Fatalf("net/http served %d requests, want the first only", n)
	}
	for i := range 5 {
		c.write(get("/hold", "X-Extra: again\r\n"))
		resp, _ := c.answer()
		h := resp.Header
		if resp.StatusCode != http.StatusNoContent || h.Get("X-Host") != "x" || h.Get("X-Host-Header") != "" ||
			h.Get("X-Extra") != "again" || h.Get("X-Remote") != c.c.LocalAddr().String() || resp.Close {
			t.Fatalf("held read %d: %d %v", i, resp.StatusCode, h)
		}
	}
	c.write(get("/hold?now"))
	if resp, body := c.answer(); resp.StatusCode != http.StatusOK || body != "now" || resp.ContentLength != 3 || resp.Close {
		t.Fatalf("answered at once: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	// The connection, answered at once, waits for the next request again.
	time.Sleep(50 * time.Millisecond)
	c.write(get("/hold?now"))
	if resp, body := c.answer(); resp.StatusCode != http.StatusOK || body != "now" {
		t.Fatalf("again at once: %d %q", resp.StatusCode, body)
	}
	if n := served.Load(); n != 1 {
		t.Fatalf("net/http served %d requests, want the first only", n)
	}
	// A handler that writes nothing answers 200 with an empty body.
	c.write(get("/hold?nothing"))
	if resp, body := c.answer(); resp.StatusCode != http.StatusOK || body != "" || resp.ContentLength != 0 {
		t.Fatalf("nothing written: %d %q, Content-Length %d", resp.StatusCode, body, resp.ContentLength)
	}
	// A request sent in pieces is read whole.
	c.write("GET /hold HTTP/1.1\r\nHo")
	time.Sleep(50 * time.Millisecond)
	c.write("st: x\r\n\r\n")
	if resp, _ := c.answer(); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("sent in pieces: %d", resp.StatusCode)
	}
	// Asked to close, it closes after the answer.
	c.write(get("/hold?now", "Connection: close\r\n"))
	if resp, _ := c.answer(); !resp.Close {
		t.Fatalf("Connection: close was not answered in kind: %v", resp.Header)
	}
	if !c.closed() {
		t.Fatal("the connection stayed open after Connection: close")
	}
	if n := served.Load(); n != 1 {
		t.Fatalf("net/http served %d requests, want the first only", n)
	}
}

// Any other request on a parked connection is net/http's, which reads it
// whole (what was read of it goes along) and answers it as it answers any:
// another route or method, HTTP/1.0, a body, a head too long, a missing
// Host, a leading empty line. Two requests sent at once are both answered.
func TestParkedConnectionsOtherRequestsGoToNetHTTP(t *testing.T) {
	addr, served := reholdServer(t, 0)
	long := strings.Repeat("a", 5000)
	for _, tc := range []struct {
		name, raw string
		status    int
		body      string
	}{
		{"another route", get("/plain"), http.StatusOK, "plain"},
		{"another method", "POST /hold?now HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", http.StatusOK, "now"},
		{"a GET with a body", "GET /hold?now HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", http.StatusOK, "now"},
		{"HTTP/1.0", "GET /hold?now HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n", http.StatusOK, "now"},
		{"a long head", get("/hold?now", "X-Long: "+long+"\r\n"), http.StatusOK, "now"},
		{"no Host", "GET /hold?now HTTP/1.1\r\n\r\n", http.StatusBadRequest, ""},
		{"two Hosts", "GET /hold?now HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", http.StatusBadRequest, ""},
		{"a leading empty line", "\r\n" + get("/hold?now"), http.StatusBadRequest, ""},
		{"a bad header name", get("/hold?now", "X Bad: 1\r\n"), http.StatusBadRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRehold(t, addr)
			c.write(get("/hold"))
			if resp, _ := c.answer(); resp.StatusCode != http.StatusNoContent {
				t.Fatalf("held read: %d", resp.StatusCode)
			}
			before := served.Load()
			c.write(tc.raw)
			resp, body := c.answer()
			if resp.StatusCode != tc.status || (tc.body != "" && body != tc.body) {
				t.Fatalf("got %d %q, want %d %q", resp.StatusCode, body, tc.status, tc.body)
			}
			if served.Load() != before+1 {
				t.Fatal("net/http did not serve it")
			}
		})
	}
	t.Run("a broken head, then the client's end", func(t *testing.T) {
		c := dialRehold(t, addr)
		c.write(get("/hold"))
		if resp, _ := c.answer(); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("held read: %d", resp.StatusCode)
		}
		c.write("BAD\r\n")
		_ = c.c.(*net.TCPConn).CloseWrite()
		if resp, _ := c.answer(); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("got %d, want net/http's 400", resp.StatusCode)
		}
	})
	t.Run("two at once", func(t *testing.T) {
		c := dialRehold(t, addr)
		c.write(get("/hold"))
		if resp, _ := c.answer(); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("held read: %d", resp.StatusCode)
		}
		c.write(get("/hold?now") + get("/plain"))
		if resp, body := c.answer(); resp.StatusCode != http.StatusOK || body != "now" {
			t.Fatalf("first: %d %q", resp.StatusCode, body)
		}
		if resp, body := c.answer(); resp.StatusCode != http.StatusOK || body != "plain" {
			t.Fatalf("second: %d %q", resp.StatusCode, body)
		}
	})
}

// A client that starts its next request and does not finish its head is
// closed once the server's header timeout passes.
func TestParkedConnectionsHeadIsBounded(t *testing.T) {
	addr, _ := reholdServer(t, 200*time.Millisecond)
	c := dialRehold(t, addr)
	c.write(get("/hold"))
	if resp, _ := c.answer(); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("held read: %d", resp.StatusCode)
	}
	c.write("GET /hold HTTP/1.1\r\n")
	start := time.Now()
	if !c.closed() {
		t.Fatal("an unfinished head kept its connection")
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Fatalf("closed after %s, want about 200ms", waited)
	}
}

func TestHeadEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"GET / HTTP/1.1\r\n", 0},
		{"GET / HTTP/1.1\r\nHost: x\r\n", 0},
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27},
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET", 27},
		{"GET / HTTP/1.1\nHost: x\n\n", 24},
		{"GET / HTTP/1.1\r\n\r\n", 18},
		{"\r\nGET / HTTP/1.1\r\n\r\n", -1},
		{"\nGET", -1},
	} {
		if got := headEnd([]byte(tc.in)); got != tc.want {
			t.Errorf("headEnd(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// A request served off net/http runs under the server's context, as
// net/http's own do: its BaseContext's values, http.ServerContextKey, and
// its end (a server's base context cancelled when it stops).
func TestParkedRequestsRunUnderTheServersContext(t *testing.T) {
	if !CanWatch() {
		t.Skip("no epoll set here: held requests stay in net/http")
	}
	type key struct{}
	base, stop := context.WithCancel(context.WithValue(context.Background(), key{}, "base"))
	defer stop()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var l *Listener
	var srv *http.Server
	seen := make(chan string, 2)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "wait" {
			d := holdRequest(l, w, r)
			d.Writer().WriteHeader(http.StatusNoContent)
			d.Finish()
			return
		}
		ctx := r.Context()
		seen <- fmt.Sprintf("%v %v", ctx.Value(key{}), ctx.Value(http.ServerContextKey) == srv)
		select {
		case <-ctx.Done():
			seen <- "ended"
		case <-time.After(5 * time.Second):
			seen <- "not ended"
		}
	})
	l = Listen(inner, Options{Route: func(string) http.Handler { return handler }})
	var served atomic.Int64
	srv = &http.Server{Handler: handler, ReadHeaderTimeout: time.Minute, ConnContext: l.ConnContext,
		BaseContext: func(net.Listener) context.Context { return base },
		ConnState: func(c net.Conn, st http.ConnState) {
			if st == http.StateActive {
				served.Add(1)
			}
			l.ConnState(c, st)
		}}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	c := dialRehold(t, inner.Addr().String())
	c.write(get("/hold"))
	if resp, _ := c.answer(); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("held read: %d", resp.StatusCode)
	}
	c.write(get("/hold?wait"))
	if got := <-seen; got != "base true" {
		t.Fatalf("the request's context holds %q, want the server's (base true)", got)
	}
	stop()
	if got := <-seen; got != "ended" {
		t.Fatalf("the server's context ended; the request's: %s", got)
	}
	if resp, _ := c.answer(); resp.StatusCode != http.StatusOK {
		t.Fatalf("answer: %d", resp.StatusCode)
	}
	if n := served.Load(); n != 1 {
		t.Fatalf("net/http served %d requests, want the first only", n)
	}
}
