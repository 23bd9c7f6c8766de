package e2e

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
)

// TestTwoReplicas runs two consensusd processes on one database behind one
// public origin: idempotency, the first terminal fact and revocation hold
// whichever replica a request reaches.
func TestTwoReplicas(t *testing.T) {
	t.Parallel()
	one := startServer(t)
	two := startServer(t, one.ReplicaOptions())
	c := one.create("Replicas", one.future(), participantSpec{"A", "agent", true}, participantSpec{"B", "agent", true})
	a := one.agent(c.Participants[0].InvitationID).join()
	b := one.agent(c.Participants[1].InvitationID).join()
	// the same agents, talking to the second replica
	a2 := &agent{s: two, inv: a.inv, session: a.session, token: a.token, digest: a.digest, pid: a.pid}
	b2 := &agent{s: two, inv: b.inv, session: b.session, token: b.token, digest: b.digest, pid: b.pid}

	// identical requests spread over both replicas store one event
	var wg sync.WaitGroup
	statuses := make([]int, 16)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			who := a
			if i%2 == 1 {
				who = a2
			}
			statuses[i] = who.post("replicated-key-1", "comment", "once").StatusCode
		}()
	}
	wg.Wait()
	created := 0
	for _, st := range statuses {
		if st == http.StatusCreated {
			created++
		} else if st != http.StatusOK {
			t.Fatalf("status %d", st)
		}
	}
	if created != 1 {
		t.Fatalf("%d events created across replicas", created)
	}

	// racing terminal decisions on different replicas settle on one outcome
	wg.Add(2)
	var ra, rb *response
	go func() { defer wg.Done(); ra = a.post("decide-a-0001", "agree", "") }()
	go func() { defer wg.Done(); rb = b2.post("decide-b-0001", "disagree", "") }()
	wg.Wait()
	if rb.StatusCode != http.StatusCreated {
		t.Fatalf("disagree: %d %s", rb.StatusCode, rb.body)
	}
	room1, room2 := a.room().json(t), b2.room().json(t)
	o1, o2 := room1["outcome"].(map[string]any), room2["outcome"].(map[string]any)
	if o1["status"] != "disagreed" || fmt.Sprint(o1) != fmt.Sprint(o2) {
		t.Fatalf("outcomes %v / %v (agree answered %d)", o1, o2, ra.StatusCode)
	}

	// revocation on one replica is seen by the other at once
	expect(t, one.do("POST", "/api/v1/admin/participants/"+b.pid+"/revoke", operator(), nil), 200, "")
	expect(t, b2.room(), 401, "unauthorized")
	expect(t, a2.room(), 200, "")
}
