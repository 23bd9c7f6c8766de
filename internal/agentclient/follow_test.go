package agentclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestFollowStreamResumes: every message calls changed, and a reconnect
// sends the last event id it saw.
func TestFollowStreamResumes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var resumed []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/i/stream" || r.Header.Get("Authorization") != "Consensus-Participant tok" {
			http.Error(w, "no", http.StatusBadRequest)
			return
		}
		mu.Lock()
		resumed = append(resumed, r.Header.Get("Last-Event-ID"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(": hello\n\nevent: room.outcome\ndata: {}\n\nid: 7\nevent: room.event\ndata: {}\n\n"))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	calls := 0
	err := NewClient().Follow(ctx, srv.URL+"/i/room", "tok", func() {
		if calls++; calls == 4 {
			cancel()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(resumed) < 2 || resumed[0] != "" || resumed[1] != "7" {
		t.Fatalf("Last-Event-ID sent: %q", resumed)
	}
}

// TestFollowFallsBackToLongPolling: a refused stream turns into held room
// requests with Prefer: wait and If-None-Match; a 401 ends Follow.
func TestFollowFallsBackToLongPolling(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	rooms := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.URL.Path == "/i/stream":
			w.WriteHeader(http.StatusMethodNotAllowed)
		case r.Header.Get("Prefer") != "wait=60":
			http.Error(w, "no wait", http.StatusBadRequest)
		case rooms == 0 && r.Header.Get("If-None-Match") == "":
			rooms++
			w.Header().Set("ETag", `"v1"`)
			_, _ = w.Write([]byte(`{}`))
		case rooms == 1 && r.Header.Get("If-None-Match") == `"v1"`:
			rooms++
			w.WriteHeader(http.StatusNotModified)
		default:
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	calls := 0
	err := NewClient().Follow(ctx, srv.URL+"/i/room", "tok", func() { calls++ })
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized || calls != 1 || rooms != 2 {
		t.Fatalf("err %v, %d calls, %d rooms", err, calls, rooms)
	}
}

// TestFollowReconnectsPromptlyEveryTime: a stream that ends after it
// worked is reopened after a short pause each time; the pause grows only
// while connecting fails (a rolling deploy ends every stream once).
func TestFollowReconnectsPromptlyEveryTime(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("id: 1\nevent: room.event\ndata: {}\n\n"))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start, calls := time.Now(), 0
	if err := NewClient().Follow(ctx, srv.URL+"/i/room", "tok", func() {
		if calls++; calls == 5 {
			cancel()
		}
	}); err != nil {
		t.Fatal(err)
	}
	// Four pauses of a second; doubling pauses would take 1+2+4+8 = 15 s.
	if took := time.Since(start); calls < 5 || took > 9*time.Second {
		t.Fatalf("%d streams in %v: the pause between working streams grew", calls, took)
	}
}
