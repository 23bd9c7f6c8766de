package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestRoomReadsStayConsistentUnderAppends: readers on two replicas read
// rooms (conditionally and not) while writers append through both. Every
// room served is one consistent state: events numbered 1..n with each prev
// the hash before it, chainHead the last hash, every decision in the roster
// an event of the room, eventsRemaining the reader's own count; a reader
// never sees fewer events than it saw before; one ETag never names two
// rooms.
func TestRoomReadsStayConsistentUnderAppends(t *testing.T) {
	t.Parallel()
	one := startServer(t)
	two := startServer(t, one.ReplicaOptions())
	l := newLedger(t)
	c := one.create("Cache under load", one.future(), participantSpec{"A", "agent", true}, participantSpec{"B", "agent", true},
		participantSpec{"C", "agent", false}, participantSpec{"D", "agent", false})
	var agents []*agent
	for i, p := range c.Participants {
		a := one.agent(p.InvitationID).join()
		if i%2 == 1 {
			a = &agent{s: two, inv: a.inv, token: a.token, digest: a.digest, pid: a.pid}
		}
		agents = append(agents, a)
	}

	const perWriter = 15
	var wg sync.WaitGroup
	for w, a := range agents[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				action, body := "comment", fmt.Sprintf("writer %d event %d", w, i)
				if i == perWriter-1 && w > 0 { // the optional C and D decide; the outcome stays pending
					action, body = "agree", ""
				}
				if r := a.post(fmt.Sprintf("w%d-event-%04d", w, i), action, body); r.StatusCode != http.StatusCreated {
					t.Errorf("writer %d: %d %s", w, r.StatusCode, r.body)
					return
				}
			}
		}()
	}
	for rd := range 4 {
		reader := agents[0]
		if rd%2 == 1 {
			reader = &agent{s: two, inv: reader.inv, token: reader.token, digest: reader.digest, pid: reader.pid}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			etag, seen := "", 0
			for range 40 {
				if rd < 2 {
					etag = "" // half the readers always read in full
				}
				r := reader.roomIf(etag)
				switch r.StatusCode {
				case http.StatusNotModified:
					continue
				case http.StatusOK:
				default:
					t.Errorf("reader %d: %d %s", rd, r.StatusCode, r.body)
					return
				}
				etag = r.Header.Get("ETag")
				n := checkRoom(t, l.record(reader.pid, r), reader.pid)
				if n < seen {
					t.Errorf("reader %d saw %d events after %d", rd, n, seen)
				}
				seen = n
			}
		}()
	}
	wg.Wait()
	m := agents[0].room().json(t)
	if n := checkRoom(t, m, agents[0].pid); n != 3*perWriter {
		t.Fatalf("%d events in the end, want %d", n, 3*perWriter)
	}
}

// checkRoom checks that m is one consistent state of a room read by
// readerID and returns its number of events.
func checkRoom(t *testing.T, m map[string]any, readerID string) int {
	t.Helper()
	events := m["events"].([]any)
	prev := strings.Repeat("0", 64)
	decided := map[string]string{} // participant → its terminal action
	mine := 0
	for i, raw := range events {
		e := raw.(map[string]any)
		if e["seq"] != float64(i+1) || e["prev"] != prev {
			t.Fatalf("event %d: seq %v prev %v, want seq %d prev %s", i, e["seq"], e["prev"], i+1, prev)
		}
		prev = e["hash"].(string)
		switch e["action"] {
		case "agree", "disagree", "abstain":
			decided[e["participantId"].(string)] = e["action"].(string)
		}
		if e["participantId"] == readerID {
			mine++
		}
	}
	if m["chainHead"] != prev {
		t.Fatalf("chainHead %v, last hash %s", m["chainHead"], prev)
	}
	for _, raw := range m["roster"].([]any) {
		p := raw.(map[string]any)
		if d, _ := p["decision"].(string); d != decided[p["participantId"].(string)] {
			b, _ := json.Marshal(p)
			t.Fatalf("roster entry %s, but the room's events decide %q", b, decided[p["participantId"].(string)])
		}
	}
	if rem := m["you"].(map[string]any)["eventsRemaining"]; rem != float64(100-mine) {
		t.Fatalf("eventsRemaining %v with %d own events", rem, mine)
	}
	return len(events)
}
