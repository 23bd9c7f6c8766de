package httpapi_test

// Edge cases of held reads and streams: a revocation ends them, and a
// change that came before a read joined the hub answers it at once.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/fwtest"
	"github.com/consensus-md/consensus/internal/live"
	"github.com/consensus-md/consensus/internal/servertest"
)

// A revocation on another replica ends a participant's open stream and
// answers its held long poll of the feed 401, however the events reach
// them.
func TestRevocationEndsStreamAndPoll(t *testing.T) {
	t.Parallel()
	s := servertest.New(t, servertest.Options{})
	other := servertest.New(t, s.ReplicaOptions())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := setUpListenerRooms(ctx, t, s, 1, 2)[0]
	p := r.parts[0]
	host := strings.TrimPrefix(s.URL, "http://")

	stream, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if err := sendGet(stream, host, "/api/v1/agent/invitations/"+p.inv+"/stream", p.token, "Accept", "text/event-stream"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(stream), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %v %v", err, resp)
	}
	streamEnded := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); streamEnded <- err }()

	poll, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer poll.Close()
	if err := sendGet(poll, host, "/api/v1/agent/invitations/"+p.inv+"/events?after=0", p.token, "Prefer", "wait=30"); err != nil {
		t.Fatal(err)
	}
	polled := make(chan *http.Response, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(poll), nil)
		if err != nil {
			t.Errorf("poll: %v", err)
		}
		polled <- resp
	}()
	time.Sleep(300 * time.Millisecond) // both are held
	select {
	case resp := <-polled:
		t.Fatalf("the poll answered before any change: %v", resp)
	default:
	}

	fwtest.Revoke(t, other, p.pid)
	select {
	case resp := <-polled:
		if resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the held poll answered %v after the revocation, want 401", resp)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held poll outlived the revocation by 10 s")
	}
	select {
	case err := <-streamEnded:
		if err != nil {
			t.Fatalf("the stream ended badly: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream outlived the revocation by 10 s")
	}
}

// A post committed after a held read's credential lookup read the room,
// and heard before the read joined the hub, answers the read at once: it
// is not left waiting for a change that already came.
func TestChangeBeforeJoiningAnswersAHeldRead(t *testing.T) {
	t.Parallel()
	// The hook is injected before the room exists: it acts once the room
	// is set up (room), on the first held read of that room.
	var room atomic.Pointer[uuid.UUID]
	var hook func(*live.Hub)
	s := servertest.New(t, servertest.Options{BeforeJoin: func(agreementID uuid.UUID, hub *live.Hub) {
		if id := room.Load(); id != nil && *id == agreementID {
			hook(hub)
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := setUpListenerRooms(ctx, t, s, 1, 2)[0]
	reader, poster := r.parts[0], r.parts[1]
	var once sync.Once
	hook = func(hub *live.Hub) {
		once.Do(func() {
			mark := hub.Mark()
			body, _ := json.Marshal(map[string]any{"action": "comment", "body": "Before the join.", "revision": r.rev, "digest": r.digest})
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/api/v1/agent/invitations/"+poster.inv+"/events", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Consensus-Participant "+poster.token)
			req.Header.Set("Idempotency-Key", "before-the-join")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("post: %v", err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Errorf("post: %d", resp.StatusCode)
				return
			}
			for !hub.ChangedSince(uuid.MustParse(r.id), mark) {
				if ctx.Err() != nil {
					t.Error("the hub never heard of the post")
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	id := uuid.MustParse(r.id)
	room.Store(&id) // after hook is set: the atomic publishes it
	host := strings.TrimPrefix(s.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if err := sendGet(conn, host, "/api/v1/agent/invitations/"+reader.inv+"/events?after=0", reader.token, "Prefer", "wait=20"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	if took := time.Since(start); resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), "Before the join.") || took > 10*time.Second {
		t.Fatalf("the held read answered %d after %s: %.300s", resp.StatusCode, took, raw)
	}
}
