package e2e

// The helpers the live tests share: the tests are in live_held_test.go
// and live_connections_test.go.

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/servertest"
)

// liveRoom is an agreement of n agents on two replicas: every agent
// joined on the first, and the same agents speaking to the second.
type liveRoom struct {
	one, two *server
	on1, on2 []*agent
}

// startLiveRoom starts the two replicas, with settings when given.
func startLiveRoom(t *testing.T, n int, settings ...map[string]string) *liveRoom {
	t.Helper()
	var o servertest.Options
	if len(settings) > 0 {
		o.Settings = settings[0]
	}
	one := startServer(t, o)
	two := startServer(t, one.ReplicaOptions())
	specs := make([]participantSpec, n)
	for i := range specs {
		specs[i] = participantSpec{fmt.Sprintf("Agent%d", i), "agent", true}
	}
	c := one.create("Live", one.future(), specs...)
	lr := &liveRoom{one: one, two: two}
	for _, p := range c.Participants {
		a := one.agent(p.InvitationID).join()
		lr.on1 = append(lr.on1, a)
		lr.on2 = append(lr.on2, &agent{s: two, inv: a.inv, session: a.session, token: a.token, digest: a.digest, pid: a.pid})
	}
	return lr
}

// held sends a GET that may be held, through the contract-validating client.
func (a *agent) held(action, query string, h map[string]string) *response {
	headers := a.auth()
	for k, v := range h {
		headers[k] = v
	}
	return a.s.do("GET", a.s.agentPath(a.inv.InvitationID, action)+query, headers, nil)
}

// percentile is the q-th percentile of sorted latencies.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func report(t *testing.T, what string, d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	t.Logf("LATENCY %s: n=%d p50=%v p99=%v max=%v", what, len(d), percentile(d, 0.5), percentile(d, 0.99), d[len(d)-1])
}
