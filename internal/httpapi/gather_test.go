package httpapi

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/parked"
)

// gatherConn is the server's side of a real loopback connection, as a
// parked.Listener accepts it.
func gatherConn(t *testing.T) *parked.GatherConn {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := parked.Listen(inner, parked.Options{})
	defer l.Close()
	client, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	gc, ok := server.(*parked.GatherConn)
	if !ok {
		t.Fatalf("the listener accepted a %T", server)
	}
	return gc
}

// A 1xx goes out before the answer and is not its status: the answer
// that follows is recorded, and gathered when it states its length.
func TestStatusRecorderSkipsInformationalAnswers(t *testing.T) {
	gc := gatherConn(t)
	w := httptest.NewRecorder()
	rec := &statusRecorder{ResponseWriter: w, conn: gc}
	rec.WriteHeader(http.StatusEarlyHints)
	if rec.status != 0 || gc.Gathering() {
		t.Fatalf("after a 103: status %d, gathering %v", rec.status, gc.Gathering())
	}
	w.Header().Set("Content-Length", "2")
	rec.WriteHeader(http.StatusOK)
	if rec.status != http.StatusOK || !gc.Gathering() {
		t.Fatalf("after the 200: status %d, gathering %v", rec.status, gc.Gathering())
	}
	if err := rec.release(); err != nil || gc.Gathering() {
		t.Fatalf("release: %v, gathering %v", err, gc.Gathering())
	}
}

// Through front, on Listen's listener: an answer that states its length
// is gathered until the handler returns or flushes, arrives intact, answer
// after answer on one connection; an answer without a stated length (a
// stream) is never held back.
func TestFrontGathersAnswersOfStatedLength(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler)}
	body := bytes.Repeat([]byte("0123456789abcdef"), 20<<10)
	wrong := make(chan string, 16)
	gathering := func(r *http.Request) bool {
		gc := parked.GatherFrom(r.Context())
		if gc == nil {
			wrong <- r.URL.Path + ": no GatherConn in the context"
			return false
		}
		return gc.Gathering()
	}
	whole := func(n int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if gathering(r) {
				wrong <- r.URL.Path + ": gathering before the answer began"
			}
			w.Header().Set("Content-Length", strconv.Itoa(n))
			w.WriteHeader(http.StatusOK)
			if !gathering(r) {
				wrong <- r.URL.Path + ": an answer of stated length is not gathered"
			}
			_, _ = w.Write(body[:10])
			_, _ = w.Write(body[10:n])
		}
	}
	// seen is closed by the client once it read what a handler flushed: a
	// handler waits for it, so a flush held back fails the test.
	var seen chan struct{}
	flushed := func(stated bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if stated {
				w.Header().Set("Content-Length", "12")
			}
			_, _ = w.Write([]byte("first\n"))
			if gathering(r) != stated {
				wrong <- r.URL.Path + ": gathering does not follow the stated length"
			}
			if err := http.NewResponseController(w).Flush(); err != nil {
				wrong <- r.URL.Path + ": flush: " + err.Error()
			}
			if gathering(r) {
				wrong <- r.URL.Path + ": still gathering after a flush"
			}
			select {
			case <-seen:
			case <-time.After(5 * time.Second):
				wrong <- r.URL.Path + ": the client never read what was flushed"
			}
			_, _ = w.Write([]byte("second"))
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/small", whole(330))
	mux.Handle("/big", whole(len(body)))
	mux.Handle("/stream", flushed(false))
	mux.Handle("/flushed", flushed(true))
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s.front(mux), ReadHeaderTimeout: time.Second, ConnContext: s.ConnContext}
	go func() { _ = srv.Serve(s.Listen(inner, time.Minute, 0)) }()
	t.Cleanup(func() { _ = srv.Close() })
	c := &http.Client{Timeout: 10 * time.Second}
	get := func(path string) *http.Response {
		resp, err := c.Get("http://" + inner.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for i := range 8 {
		switch i % 4 {
		case 0, 1:
			path, want := "/big", body
			if i%2 == 1 {
				path, want = "/small", body[:330]
			}
			resp := get(path)
			got, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
				t.Fatalf("%s: status %d, %d bytes (want %d), %v: %.80q", path, resp.StatusCode, len(got), len(want), err, got)
			}
		default:
			path := "/stream"
			if i%4 == 3 {
				path = "/flushed"
			}
			seen = make(chan struct{})
			resp := get(path)
			first := make([]byte, len("first\n"))
			if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "first\n" {
				t.Fatalf("%s: %q, %v", path, first, err)
			}
			close(seen)
			rest, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil || string(rest) != "second" {
				t.Fatalf("%s: rest %q, %v", path, rest, err)
			}
		}
	}
	close(wrong)
	for w := range wrong {
		t.Error(w)
	}
}
