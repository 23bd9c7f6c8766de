package stress

import (
	"bufio"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLiveAcrossProcesses: two consensusd processes on one PostgreSQL. A
// long poll held on replica A answers when an event is posted on replica B,
// and a stream opened on A carries every event posted on B, in order, with
// id = seq. The e2e tests measure the same with in-process replicas; this
// one proves it across real processes, each with its own pool and listener.
func TestLiveAcrossProcesses(t *testing.T) {
	t.Parallel()
	v := newVenue(t, venueOpts{replicas: 2})
	a, b := v.url(0), v.url(1)
	ag := v.create(t, a, agreementBody("Live", "Wake the other replica.", nil,
		spec{Name: "Reader", Required: true}, spec{Name: "Writer", Required: true}))
	reader := v.join(t, a, ag.Participants[0].InvitationID)
	writer := v.join(t, b, ag.Participants[1].InvitationID)
	readerAuth := hdr("Authorization", participantAuth(reader.Token))

	// The long poll.
	for i := range 5 {
		room := v.room(a, reader)
		wantStatus(t, "room", room, http.StatusOK)
		held := make(chan *reply, 1)
		go func() {
			held <- v.get(agentURL(a, reader.Inv.InvitationID, "room"),
				hdr("Authorization", participantAuth(reader.Token), "If-None-Match", room.Header.Get("ETag"), "Prefer", "wait=30"))
		}()
		time.Sleep(300 * time.Millisecond)
		select { // nothing changed yet: the read must still be held
		case r := <-held:
			t.Fatalf("the read with Prefer: wait answered before any change: %s", r)
		default:
		}
		post := v.postEvent(b, writer, fmt.Sprintf("live-poll-%d", i), "comment", "Wake up.")
		wantStatus(t, "comment on the other replica", post, http.StatusCreated)
		select {
		case r := <-held:
			wantStatus(t, "held room read", r, http.StatusOK)
			late := r.Received.Sub(post.Received)
			t.Logf("held request on A answered %v after the post on B was answered", late.Round(time.Millisecond))
			if late > 2*time.Second {
				t.Fatalf("the held request woke %v after the commit on the other replica", late)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the held request on replica A never woke for an event posted on replica B")
		}
	}

	// The stream.
	req, err := http.NewRequest(http.MethodGet, agentURL(a, reader.Inv.InvitationID, "stream"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = readerAuth
	req.Header.Set("Last-Event-ID", "5") // the five comments above
	resp, err := v.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	const n = 30
	go func() {
		for i := range n {
			if r := v.postEvent(b, writer, fmt.Sprintf("live-stream-%d", i), "comment", "Streamed."); !r.OK() {
				t.Errorf("post %d: %s", i, r)
				return
			}
		}
	}()
	var ids []int
	sc := bufio.NewScanner(resp.Body)
	done := time.AfterFunc(60*time.Second, func() { resp.Body.Close() })
	defer done.Stop()
	// One message is its field lines up to a blank line; "id" may come
	// before "event".
	event, id := "", ""
	for len(ids) < n && sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case line == "":
			if event == "room.event" {
				seq, err := strconv.Atoi(id)
				if err != nil {
					t.Fatalf("a room.event with id %q", id)
				}
				ids = append(ids, seq)
			}
			event, id = "", ""
		}
	}
	want := make([]int, n)
	for i := range want {
		want[i] = 6 + i
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("the stream on A carried ids %v, want %v", ids, want)
	}
}
