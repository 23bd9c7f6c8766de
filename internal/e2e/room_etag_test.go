package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// etagLedger remembers the body served under each room ETag and fails the
// test when one ETag ever names two different rooms (serverTime aside): a
// client holding that tag would be told 304 about a room it has not seen.
type etagLedger struct {
	t      *testing.T
	mu     sync.Mutex
	bodies map[string]string // ETag (with the reader) → body without serverTime
}

func newLedger(t *testing.T) *etagLedger { return &etagLedger{t: t, bodies: map[string]string{}} }

// record checks a 200 room answer against every earlier one.
func (l *etagLedger) record(reader string, r *response) map[string]any {
	l.t.Helper()
	m := r.json(l.t)
	delete(m, "serverTime")
	norm, err := json.Marshal(m)
	if err != nil {
		l.t.Fatal(err)
	}
	key := reader + " " + r.Header.Get("ETag")
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.bodies[key]; ok && prev != string(norm) {
		l.t.Fatalf("ETag %s names two different rooms:\n%s\n%s", r.Header.Get("ETag"), prev, norm)
	}
	l.bodies[key] = string(norm)
	return m
}

// roomIf reads the room with If-None-Match etag (none when empty).
func (a *agent) roomIf(etag string) *response {
	h := a.auth()
	if etag != "" {
		h["If-None-Match"] = etag
	}
	return a.s.do("GET", a.s.agentPath(a.inv.InvitationID, "room"), h, nil)
}

// changed reads a's room with the ETag it last saw, requires a 200 with a
// new ETag (the room changed) and returns the new ETag and the room.
func changed(t *testing.T, l *etagLedger, a *agent, etag, what string) (string, map[string]any) {
	t.Helper()
	r := a.roomIf(etag)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("after %s: status %d with the old ETag, want 200 (the room changed)", what, r.StatusCode)
	}
	next := r.Header.Get("ETag")
	if next == etag || len(next) < 3 || next[0] != '"' {
		t.Fatalf("after %s: ETag %s (was %s)", what, next, etag)
	}
	return next, l.record(a.pid, r)
}

// unchanged requires a 304 with the same ETag.
func unchanged(t *testing.T, a *agent, etag, what string) {
	t.Helper()
	r := a.roomIf(etag)
	if r.StatusCode != http.StatusNotModified || r.Header.Get("ETag") != etag || len(r.body) != 0 {
		t.Fatalf("%s: status %d, ETag %s (sent %s), %d body bytes; want 304", what, r.StatusCode, r.Header.Get("ETag"), etag, len(r.body))
	}
}

// TestRoomETagChangesWithEveryChange: the room's ETag changes with each
// kind of change the room shows (an event, a claim, an outcome by decision,
// the expiry at the deadline) and never names two different rooms; a
// revoked reader gets 401, not 304.
func TestRoomETagChangesWithEveryChange(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	l := newLedger(t)
	deadline := s.Clock.Now().Add(time.Hour).Truncate(time.Second)
	c := s.create("ETags", deadline, participantSpec{"A", "agent", true}, participantSpec{"B", "agent", true}, participantSpec{"C", "agent", false})
	a := s.agent(c.Participants[0].InvitationID).join()
	b := s.agent(c.Participants[1].InvitationID).join()

	r := a.room()
	expect(t, r, 200, "")
	etag := r.Header.Get("ETag")
	l.record(a.pid, r)
	unchanged(t, a, etag, "nothing changed")
	if r := a.roomIf(`"other", ` + etag); r.StatusCode != http.StatusNotModified || r.Header.Get("ETag") != etag {
		t.Fatalf("a list holding the ETag: %d", r.StatusCode)
	}

	expect(t, b.post("b-comment-0001", "comment", "hello"), 201, "")
	etag, m := changed(t, l, a, etag, "an event")
	if len(m["events"].([]any)) != 1 {
		t.Fatalf("events %v", m["events"])
	}
	unchanged(t, a, etag, "after the event")
	expect(t, b.post("b-comment-0001", "comment", "hello"), 200, "") // a replay changes nothing
	unchanged(t, a, etag, "after a replay")

	s.agent(c.Participants[2].InvitationID).join()
	etag, m = changed(t, l, a, etag, "a claim")
	if st := m["roster"].([]any)[2].(map[string]any)["state"]; st != "claimed" {
		t.Fatalf("roster state %v", st)
	}
	unchanged(t, a, etag, "after the claim")

	expect(t, a.post("a-comment-0001", "comment", "mine"), 201, "")
	etag, m = changed(t, l, a, etag, "the reader's own event")
	if m["you"].(map[string]any)["eventsRemaining"] != float64(99) {
		t.Fatalf("you %v", m["you"])
	}

	expect(t, b.post("b-agree-0001", "agree", ""), 201, "")
	etag, _ = changed(t, l, a, etag, "a decision")
	unchanged(t, a, etag, "after the decision")

	// The deadline passes with the outcome pending: the room shows expired
	// before anything stores it, so the ETag changes with no write at all.
	s.Clock.Advance(time.Hour)
	etag, m = changed(t, l, a, etag, "the deadline")
	if m["outcome"].(map[string]any)["status"] != "expired" {
		t.Fatalf("outcome %v", m["outcome"])
	}
	// That read stored the expiry, a new version: one more full read, then
	// the tag holds.
	if r := a.roomIf(etag); r.StatusCode == http.StatusOK {
		etag = r.Header.Get("ETag")
		l.record(a.pid, r)
	}
	unchanged(t, a, etag, "after the expiry")

	// An outcome by decision, in a second agreement.
	c2 := s.create("ETags 2", s.future(), participantSpec{"A2", "agent", true}, participantSpec{"B2", "agent", true})
	a2 := s.agent(c2.Participants[0].InvitationID).join()
	b2 := s.agent(c2.Participants[1].InvitationID).join()
	r = b2.room()
	etag2 := r.Header.Get("ETag")
	l.record(b2.pid, r)
	expect(t, b2.post("b2-agree-0001", "agree", ""), 201, "")
	etag2, _ = changed(t, l, b2, etag2, "B2's own decision")
	expect(t, a2.post("a2-agree-0001", "agree", ""), 201, "")
	etag2, m = changed(t, l, b2, etag2, "the outcome")
	if m["outcome"].(map[string]any)["status"] != "reached" || m["artifact"] == nil {
		t.Fatalf("outcome %v, artifact %v", m["outcome"], m["artifact"])
	}
	unchanged(t, b2, etag2, "after the outcome")

	// The reader's revocation: 401 however current its ETag.
	expect(t, s.do("POST", "/api/v1/admin/participants/"+b2.pid+"/revoke", operator(), nil), 200, "")
	r = b2.roomIf(etag2)
	expect(t, r, 401, "unauthorized")
	if r.Header.Get("WWW-Authenticate") != "Consensus-Participant" {
		t.Fatalf("WWW-Authenticate %q", r.Header.Get("WWW-Authenticate"))
	}
}

// TestReplicaNeverServesStaleRoom: a second replica that cached a room
// serves each change made through the first at once (200, not 304 and not
// the old bytes), both replicas give the same version the same ETag and
// the same bytes, and a revocation through one is a 401 on the other.
func TestReplicaNeverServesStaleRoom(t *testing.T) {
	t.Parallel()
	one := startServer(t)
	two := startServer(t, one.ReplicaOptions())
	l := newLedger(t)
	c := one.create("Replica cache", one.future())
	a := one.agent(c.Participants[0].InvitationID).join()
	b := one.agent(c.Participants[1].InvitationID).join()
	a2 := &agent{s: two, inv: a.inv, token: a.token, digest: a.digest, pid: a.pid}
	b2 := &agent{s: two, inv: b.inv, token: b.token, digest: b.digest, pid: b.pid}

	r := a2.room()
	etag := r.Header.Get("ETag")
	l.record(a.pid, r)
	for i := range 6 {
		writer := b
		if i%2 == 1 {
			writer = b2
		}
		expect(t, writer.post(fmt.Sprintf("b-comment-%04d", i), "comment", fmt.Sprintf("change %d", i)), 201, "")
		var m map[string]any
		etag, m = changed(t, l, a2, etag, fmt.Sprintf("comment %d through replica %d", i, i%2+1))
		if n := len(m["events"].([]any)); n != i+1 {
			t.Fatalf("replica two shows %d events after %d were stored", n, i+1)
		}
		unchanged(t, a, etag, "replica one, same version")
		unchanged(t, a2, etag, "replica two, same version")
		if x, y := withoutServerTime(t, a.room().body), withoutServerTime(t, a2.room().body); !bytes.Equal(x, y) {
			t.Fatalf("the replicas serve different bytes for one version:\n%s\n%s", x, y)
		}
	}

	expect(t, b.post("b-agree-0001", "agree", ""), 201, "")
	expect(t, a2.post("a-agree-0001", "agree", ""), 201, "")
	for _, who := range []*agent{a, a2, b, b2} {
		m := who.room().json(t)
		if m["outcome"].(map[string]any)["status"] != "reached" {
			t.Fatalf("%s: outcome %v", who.s.URL, m["outcome"])
		}
	}
	art1, art2 := a.artifact("GET"), a2.artifact("GET")
	expect(t, art1, 200, "")
	expect(t, art2, 200, "")
	if !bytes.Equal(art1.body, art2.body) || art1.Header.Get("ETag") != art2.Header.Get("ETag") {
		t.Fatal("the replicas serve different artifacts")
	}

	etag = a2.room().Header.Get("ETag")
	expect(t, one.do("POST", "/api/v1/admin/participants/"+a.pid+"/revoke", operator(), nil), 200, "")
	expect(t, a2.roomIf(etag), 401, "unauthorized")
	expect(t, a2.artifact("GET"), 401, "unauthorized")
	expect(t, b2.room(), 200, "")
}

// withoutServerTime is a room body with serverTime blanked.
func withoutServerTime(t *testing.T, body []byte) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "serverTime")
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
