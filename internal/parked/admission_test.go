package parked

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// admissionServer serves handler on a listener admitting at most n
// connections in their first request at once, each for at most hold, as
// the daemon serves (ConnState wired); it returns the server's address.
func admissionServer(t *testing.T, n int, hold time.Duration, handler http.Handler) (*Listener, string) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newListener(inner, time.Minute, newAdmission(n, hold))
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: time.Minute, ConnState: l.ConnState}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l, inner.Addr().String()
}

// writeGet writes a GET of path on c.
func writeGet(c net.Conn, path string) error {
	_, err := io.WriteString(c, get(path))
	return err
}

// send writes a GET of path on a new connection and returns it, with a
// channel that gets the status line of its answer.
func send(t *testing.T, addr, path string) (net.Conn, <-chan string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := writeGet(c, path); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(c).ReadString('\n')
		got <- line
	}()
	return c, got
}

func answered(t *testing.T, got <-chan string, within time.Duration) string {
	t.Helper()
	select {
	case line := <-got:
		return line
	case <-time.After(within):
		t.Fatalf("no answer within %s", within)
		return ""
	}
}

// A reconnect storm is served a bounded number of connections at a time:
// the next one starts when one before it is answered.
func TestAdmissionBoundsFirstRequests(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int32
	s, addr := admissionServer(t, 2, time.Hour, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started.Add(1)
		<-release
	}))
	var answers []<-chan string
	for range 3 {
		_, got := send(t, addr, "/")
		answers = append(answers, got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for started.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // time enough for a third to start, were it admitted
	if n := started.Load(); n != 2 {
		t.Fatalf("%d requests started, want 2 (the bound)", n)
	}
	if n := s.Admitted(); n != 2 {
		t.Fatalf("%d connections counted, want 2", n)
	}
	release <- struct{}{} // one answer: its connection turns idle and frees a place
	deadline = time.Now().Add(5 * time.Second)
	for started.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := started.Load(); n != 3 {
		t.Fatalf("%d requests started after one was answered, want 3", n)
	}
	close(release)
	for _, got := range answers {
		if line := answered(t, got, 5*time.Second); line != "HTTP/1.1 200 OK\r\n" {
			t.Fatalf("answer %q", line)
		}
	}
}

// A connection leaves the count when its first request is answered (an
// idle keep-alive connection holds no place), when it is taken from
// net/http (a held request), or when it closes; a client that connects and
// sends nothing holds its place only for the admission's hold.
func TestAdmissionFreesPlaces(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/take" {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
			return // held: nothing is written
		}
		_, _ = io.WriteString(w, "ok")
	})
	for _, tc := range []struct {
		name string
		hold time.Duration
		// first occupies the one place; the second request must then be served.
		first func(t *testing.T, addr string)
	}{
		{"idle", time.Hour, func(t *testing.T, addr string) {
			_, got := send(t, addr, "/")
			answered(t, got, 5*time.Second) // the connection stays open, idle
		}},
		{"hijacked", time.Hour, func(t *testing.T, addr string) {
			_, _ = send(t, addr, "/take")
		}},
		{"closed", time.Hour, func(t *testing.T, addr string) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond) // accepted
			_ = c.Close()
		}},
		{"silent", 100 * time.Millisecond, func(t *testing.T, addr string) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, addr := admissionServer(t, 1, tc.hold, handler)
			tc.first(t, addr)
			_, got := send(t, addr, "/")
			if line := answered(t, got, 5*time.Second); line != "HTTP/1.1 200 OK\r\n" {
				t.Fatalf("answer %q", line)
			}
			if tc.name != "silent" {
				deadline := time.Now().Add(5 * time.Second)
				for s.Admitted() != 0 && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				if n := s.Admitted(); n != 0 {
					t.Fatalf("%d connections still counted", n)
				}
			}
		})
	}
}

// A connection coming back from a held request is served at once, though
// every place is taken: it is a kept-alive connection's next request.
func TestAdmissionLetsRejoiningConnectionsIn(t *testing.T) {
	if !CanWatch() {
		t.Skip("no epoll set here: held requests stay in net/http")
	}
	release := make(chan struct{})
	defer close(release)
	var s *Listener
	s, addr := admissionServer(t, 1, time.Hour, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/block":
			<-release
		case "/hold":
			d := holdRequest(s, w, r)
			if d == nil {
				t.Error("not detached")
				return
			}
			go func() {
				d.Writer().WriteHeader(http.StatusNoContent)
				d.Finish()
			}()
		default:
			_, _ = io.WriteString(w, "ok")
		}
	}))
	held, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	rd := bufio.NewReader(held)
	get := func(path string) string {
		t.Helper()
		_ = held.SetDeadline(time.Now().Add(5 * time.Second))
		if err := writeGet(held, path); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.Status
	}
	if st := get("/hold"); st != "204 No Content" {
		t.Fatalf("held answer %q", st)
	}
	_, _ = send(t, addr, "/block") // takes the one place
	deadline := time.Now().Add(5 * time.Second)
	for s.Admitted() != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st := get("/"); st != "200 OK" {
		t.Fatalf("rejoining connection's answer %q", st)
	}
}
