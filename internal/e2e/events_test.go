package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

func TestEvents(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Events", s.future(), participantSpec{"Alpha", "agent", true}, participantSpec{"Beta", "agent", true})
	a := s.agent(c.Participants[0].InvitationID).join()
	b := s.agent(c.Participants[1].InvitationID).join()
	path := s.agentPath(a.inv.InvitationID, "events")
	send := func(key string, body any) *response {
		h := a.auth()
		return sendWith(s, path, h, key, body)
	}
	sendInvalid := func(key string, body any) *response {
		h := invalid(a.auth())
		return sendWith(s, path, h, key, body)
	}
	cmd := func(action, body string) map[string]any {
		return map[string]any{"action": action, "body": body, "revision": 1, "digest": c.RevisionDigest}
	}

	t.Run("key syntax", func(t *testing.T) {
		expect(t, sendInvalid("", cmd("comment", "x")), 400, "invalid-request")
		for _, k := range []string{"short", "has space in it", strings.Repeat("k", 129), "slash/key/1"} {
			expect(t, sendInvalid(k, cmd("comment", "x")), 400, "invalid-request")
		}
	})
	t.Run("body syntax", func(t *testing.T) {
		for name, body := range map[string]any{
			"unknown action":      cmd("approve", ""),
			"terminal with body":  cmd("agree", "I agree"),
			"empty advisory":      cmd("comment", ""),
			"4001 characters":     cmd("comment", strings.Repeat("😀", 4001)),
			"missing digest":      map[string]any{"action": "comment", "body": "x", "revision": 1},
			"missing revision":    map[string]any{"action": "comment", "body": "x", "digest": c.RevisionDigest},
			"revision as string":  map[string]any{"action": "comment", "body": "x", "revision": "1", "digest": c.RevisionDigest},
			"revision fractional": map[string]any{"action": "comment", "body": "x", "revision": 1.5, "digest": c.RevisionDigest},
			"upper-case digest":   map[string]any{"action": "comment", "body": "x", "revision": 1, "digest": strings.ToUpper(c.RevisionDigest)},
			"short digest":        map[string]any{"action": "comment", "body": "x", "revision": 1, "digest": c.RevisionDigest[:63]},
			"unknown field":       map[string]any{"action": "comment", "body": "x", "revision": 1, "digest": c.RevisionDigest, "signature": "x"},
		} {
			t.Run(name, func(t *testing.T) {
				expect(t, sendInvalid("syntax-"+strings.ReplaceAll(name, " ", "-"), body), 400, "invalid-request")
			})
		}
	})
	t.Run("body limit", func(t *testing.T) {
		expect(t, sendInvalid("too-large-1", `{"action":"comment","body":"`+strings.Repeat("a", 64*1024)+`","revision":1,"digest":"`+c.RevisionDigest+`"}`), 413, "payload-too-large")
	})
	t.Run("4000 four-byte characters fit", func(t *testing.T) {
		r := send("emoji-4000", cmd("comment", strings.Repeat("😀", 4000)))
		expect(t, r, 201, "")
	})
	var first map[string]any
	t.Run("new, then replay", func(t *testing.T) {
		r := send("comment-0001", cmd("comment", "Looks <fine> & ready\u2028"))
		expect(t, r, 201, "")
		first = r.json(t)
		ev := first["event"].(map[string]any)
		if ev["body"] != "Looks <fine> & ready\u2028" || ev["participantId"] != a.pid || ev["revision"] != float64(1) {
			t.Fatalf("event %v", ev)
		}
		again := send("comment-0001", map[string]any{"action": "comment", "body": "Looks <fine> & ready\u2028", "revision": 1, "digest": "sha256:" + c.RevisionDigest})
		expect(t, again, 200, "")
		if string(mustJSON(again.json(t)["event"])) != string(mustJSON(ev)) {
			t.Fatalf("replay returned another event:\n%s\n%s", again.body, mustJSON(ev))
		}
	})
	t.Run("same key, different command", func(t *testing.T) {
		expect(t, send("comment-0001", cmd("comment", "something else")), 409, "idempotency-key-reused")
		expect(t, send("comment-0001", cmd("question", "Looks <fine> & ready\u2028")), 409, "idempotency-key-reused")
	})
	t.Run("keys are scoped per participant", func(t *testing.T) {
		expect(t, b.post("comment-0001", "comment", "my own"), 201, "")
	})
	t.Run("stale or wrong revision", func(t *testing.T) {
		expect(t, send("stale-0001", map[string]any{"action": "comment", "body": "x", "revision": 2, "digest": c.RevisionDigest}), 409, "revision-mismatch")
		expect(t, send("stale-0002", map[string]any{"action": "comment", "body": "x", "revision": 1, "digest": strings.Repeat("0", 64)}), 409, "revision-mismatch")
	})
	t.Run("terminal once", func(t *testing.T) {
		expect(t, send("agree-0001", cmd("agree", "")), 201, "")
		expect(t, send("disagree-0001", cmd("disagree", "")), 409, "already-decided")
		expect(t, send("agree-0002", cmd("agree", "")), 409, "already-decided")
		expect(t, send("comment-after-own-decision", cmd("comment", "still pending")), 201, "")
		expect(t, send("agree-0001", cmd("agree", "")), 200, "")
	})
	t.Run("room closed", func(t *testing.T) {
		r := b.post("b-agree-0001", "agree", "")
		expect(t, r, 201, "")
		if r.json(t)["outcome"].(map[string]any)["status"] != "reached" {
			t.Fatalf("outcome %s", r.body)
		}
		expect(t, send("after-close", cmd("comment", "late")), 409, "room-closed")
		expect(t, b.post("b-after-close", "comment", "late"), 409, "room-closed")
		// replays still answer after the room closed
		expect(t, send("comment-0001", cmd("comment", "Looks <fine> & ready\u2028")), 200, "")
		// the order of checks: a stale revision is reported before the closed room
		expect(t, send("stale-after-close", map[string]any{"action": "comment", "body": "x", "revision": 9, "digest": c.RevisionDigest}), 409, "revision-mismatch")
	})
	t.Run("hash chain", func(t *testing.T) {
		m := a.room().json(t)
		prev := strings.Repeat("0", 64)
		for i, e := range m["events"].([]any) {
			ev := e.(map[string]any)
			if ev["prev"] != prev || ev["seq"] != float64(i+1) {
				t.Fatalf("event %d breaks the chain: %v", i, ev)
			}
			prev = ev["hash"].(string)
		}
		if m["chainHead"] != prev {
			t.Fatal("chainHead is not the last hash")
		}
	})
}

func sendWith(s *server, path string, h map[string]string, key string, body any) *response {
	if key != "" {
		h["Idempotency-Key"] = key
	}
	return s.do("POST", path, h, body)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func TestEventLimit(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Limit", s.future())
	a := s.agent(c.Participants[0].InvitationID).join()
	for i := 1; i <= 99; i++ {
		expect(t, a.post(fmt.Sprintf("limit-%04d", i), "comment", fmt.Sprint(i)), 201, "")
	}
	expect(t, a.post("limit-0100", "agree", ""), 201, "") // terminal events count too
	expect(t, a.post("limit-0101", "comment", "one too many"), 409, "event-limit")
	expect(t, a.post("limit-0050", "comment", "50"), 200, "") // replays still work
	if m := a.room().json(t); m["you"].(map[string]any)["eventsRemaining"] != float64(0) {
		t.Fatalf("eventsRemaining %v", m["you"])
	}
}

// TestConcurrentIdenticalRequests: 24 identical requests at once store one
// event; one answer is 201, the rest 200 with the same event.
func TestConcurrentIdenticalRequests(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Concurrency", s.future())
	a := s.agent(c.Participants[0].InvitationID).join()
	var wg sync.WaitGroup
	results := make([]*response, 24)
	start := make(chan struct{})
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = a.post("same-key-0001", "comment", "only once")
		}()
	}
	close(start)
	wg.Wait()
	created, ids := 0, map[any]bool{}
	for _, r := range results {
		switch r.StatusCode {
		case http.StatusCreated:
			created++
		case http.StatusOK:
		default:
			t.Fatalf("status %d: %s", r.StatusCode, r.body)
		}
		ids[r.json(t)["event"].(map[string]any)["id"]] = true
	}
	if created != 1 || len(ids) != 1 {
		t.Fatalf("%d created, %d distinct events", created, len(ids))
	}
	if n := len(a.room().json(t)["events"].([]any)); n != 1 {
		t.Fatalf("%d events stored", n)
	}
}

// TestRacingTerminalDecisions: required participants decide at the same
// moment; every run settles on one outcome that matches the first stored
// terminal event, and no decision is lost or duplicated.
func TestRacingTerminalDecisions(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for round := 0; round < 5; round++ {
		c := s.create(fmt.Sprintf("Race %d", round), s.future(),
			participantSpec{"A", "agent", true}, participantSpec{"B", "agent", true}, participantSpec{"C", "agent", true})
		actions := []string{"agree", "disagree", "abstain"}
		agents := make([]*agent, 3)
		for i := range agents {
			agents[i] = s.agent(c.Participants[i].InvitationID).join()
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		outcomes := make([]string, 3)
		for i, ag := range agents {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				r := ag.post("decide-0001", actions[i], "")
				if r.StatusCode != http.StatusCreated && r.StatusCode != http.StatusConflict {
					t.Errorf("status %d: %s", r.StatusCode, r.body)
					return
				}
				if r.StatusCode == http.StatusCreated {
					outcomes[i] = r.json(t)["outcome"].(map[string]any)["status"].(string)
				}
			}()
		}
		close(start)
		wg.Wait()
		room := agents[0].room().json(t)
		events := room["events"].([]any)
		if len(events) == 0 {
			t.Fatal("no decision stored")
		}
		firstAction := events[0].(map[string]any)["action"]
		want := map[any]string{"disagree": "disagreed", "abstain": "no_consensus"}[firstAction]
		if firstAction == "agree" && len(events) > 1 {
			want = map[any]string{"disagree": "disagreed", "abstain": "no_consensus"}[events[1].(map[string]any)["action"]]
		}
		o := room["outcome"].(map[string]any)
		if o["status"] != want {
			t.Fatalf("round %d: outcome %v after events %v", round, o, events)
		}
		deciding := events[len(events)-1].(map[string]any)["id"]
		if o["decidingEventId"] != deciding {
			t.Fatalf("deciding event %v, want the last stored %v", o["decidingEventId"], deciding)
		}
	}
}
