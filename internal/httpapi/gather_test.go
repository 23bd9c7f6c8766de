package httpapi

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// tcpPair is a real loopback connection: the server's side wrapped as
// rejoinListener wraps it, and the client's side.
func tcpPair(t *testing.T) (*gatherConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	gc, ok := wrapGather(server).(*gatherConn)
	if !ok {
		t.Fatalf("wrapGather(%T) did not wrap", server)
	}
	return gc, client
}

// arrived reads what reaches the client within wait.
func arrived(t *testing.T, c net.Conn, wait time.Duration) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	var got []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal(err)
			}
			return got
		}
	}
}

func TestGatherConnKeepsTheFlushForTheLargeWrite(t *testing.T) {
	gc, client := tcpPair(t)
	head := bytes.Repeat([]byte("h"), 4<<10)
	body := bytes.Repeat([]byte("b"), 200<<10)

	gc.gather()
	if n, err := gc.Write(head); n != len(head) || err != nil {
		t.Fatalf("kept write: %d, %v", n, err)
	}
	if got := arrived(t, client, 100*time.Millisecond); len(got) != 0 {
		t.Fatalf("%d bytes went out before the large write", len(got))
	}
	done := make(chan error, 1)
	go func() {
		n, err := gc.Write(body)
		if err == nil && n != len(body) {
			err = io.ErrShortWrite
		}
		done <- errors.Join(err, gc.release())
	}()
	var got []byte
	for len(got) < len(head)+len(body) {
		got = append(got, arrived(t, client, 2*time.Second)...)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, append(head, body...)) {
		t.Fatal("the bytes arrived out of order or changed")
	}
	if gc.pending != nil || gc.gathering {
		t.Fatal("the connection still gathers after release")
	}
}

func TestGatherConnReleaseSendsWhatItKept(t *testing.T) {
	gc, client := tcpPair(t)
	gc.gather()
	_, _ = gc.Write([]byte("small "))
	_, _ = gc.Write([]byte("answer"))
	if err := gc.release(); err != nil {
		t.Fatal(err)
	}
	if got := arrived(t, client, time.Second); string(got) != "small answer" {
		t.Fatalf("got %q", got)
	}
}

// Outside a mark a write goes at once: a stream's flushed event is never
// held back waiting for a write that may not come.
func TestGatherConnWritesAtOnceOutsideAMark(t *testing.T) {
	gc, client := tcpPair(t)
	if _, err := gc.Write([]byte("event")); err != nil {
		t.Fatal(err)
	}
	if got := arrived(t, client, time.Second); string(got) != "event" {
		t.Fatalf("got %q", got)
	}
	var nilConn *gatherConn // a connection that is not a gatherConn (TLS)
	nilConn.gather()
	if err := nilConn.release(); err != nil {
		t.Fatal(err)
	}
}

// A whole answer written under gatherWrites, through net/http on Listen's
// listener, arrives intact, answer after answer on one connection.
func TestGatherWritesThroughNetHTTP(t *testing.T) {
	s := &Server{} // Listen and ConnContext are all this test serves through
	body := bytes.Repeat([]byte("0123456789abcdef"), 20<<10)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(gatherKey{}) == nil {
			http.Error(w, "no gatherConn in the context", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Length", "330")
		defer gatherWrites(r.Context()).release()
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body[:10])
		_, _ = w.Write(body[10:330])
	})
	big := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer gatherWrites(r.Context()).release()
		_, _ = w.Write(body[:100])
		_, _ = w.Write(body[100:])
	})
	mux := http.NewServeMux()
	mux.Handle("/small", handler)
	mux.Handle("/big", big)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: time.Second, ConnContext: s.ConnContext}
	go func() { _ = srv.Serve(s.Listen(inner, time.Minute)) }()
	t.Cleanup(func() { _ = srv.Close() })
	c := &http.Client{Timeout: 10 * time.Second}
	for i := range 6 {
		path, want := "/big", body
		if i%2 == 1 {
			path, want = "/small", body[:330]
		}
		resp, err := c.Get("http://" + inner.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
			t.Fatalf("%s: status %d, %d bytes (want %d), %v: %.80q", path, resp.StatusCode, len(got), len(want), err, got)
		}
	}
}
