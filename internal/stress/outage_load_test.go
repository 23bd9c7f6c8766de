package stress

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/proctest"
)

// outageWindow is when the database was surely gone: from the moment the
// stop (or the freeze) completed to the moment the test began to bring it
// back. Recovery is timed from the moment it was back.
type outageWindow struct {
	phase       string
	from, to    time.Time
	recoveries  time.Duration // until every replica's health said ok
	clientsBack time.Duration // until every client had a 2xx again
}

// TestStressDatabaseOutage (under load): two replicas on a private
// PostgreSQL serve clients that read rooms and post comments, retrying
// 503s and timeouts with the same Idempotency-Key. PostgreSQL is stopped,
// restarted, frozen (SIGSTOP of every process of the cluster) and thawed.
// Every request sent and answered while the database was gone must be a
// 503 problem (code unavailable, Retry-After) within the bound; no request
// at any time may be answered 401, 404, 500 or hang; health reports the
// database down; the service recovers without a restart (the time to
// recover is logged), and every 2xx the clients saw is stored, once.
func TestStressDatabaseOutage(t *testing.T) {
	t.Parallel()
	sd := seed(t)
	pg := proctest.StartPostgres(t)
	v := newVenue(t, venueOpts{replicas: 2, dbURL: pg.URL(), env: map[string]string{"CONSENSUS_DB_TIMEOUT": dbTimeoutSetting}})
	agreements, clients := 3, 6
	if full() {
		agreements, clients = 8, 24
	}
	var members []*member
	for i := 0; i < agreements; i++ {
		base := v.url(i % 2)
		ag := v.create(t, base, agreementBody(fmt.Sprintf("Outage %d", i), "Keep records through an outage.", nil,
			spec{Name: "A", Required: true}, spec{Name: "B", Required: true}, spec{Name: "C", Required: true}))
		for _, p := range ag.Participants {
			members = append(members, v.join(t, base, p.InvitationID))
		}
	}
	settleOutbox(t, v.db)
	l := newLoad(t, v, loadConfig{patience: 2 * time.Minute})
	var okSince sync.Map       // client → when its latest 2xx was received
	var answeredSince sync.Map // client → when its latest answer (any status) was received
	l.onAttempt = func(a *attempt) {
		if a.Err == "" {
			answeredSince.Store(a.Client, a.Recv)
		}
		if a.Status >= 200 && a.Status < 300 {
			okSince.Store(a.Client, a.Recv)
		}
	}
	var stopLoad atomic.Bool
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(sd, uint64(c)))
			for n := 0; !stopLoad.Load(); n++ {
				m := members[(c+n)%len(members)]
				var a *attempt
				if n%2 == 0 {
					a = l.call(rng, attempt{Kind: "room", Client: c, ParticipantID: m.PID, InvitationID: m.Inv.InvitationID, AsParticipant: true}, false, func(base string) request {
						return request{Method: "GET", URL: agentURL(base, m.Inv.InvitationID, "room"), Header: hdr("Authorization", participantAuth(m.Token))}
					})
				} else {
					key := fmt.Sprintf("outage-%d-%d", c, n)
					a = l.call(rng, attempt{Kind: "event", Client: c, ParticipantID: m.PID, InvitationID: m.Inv.InvitationID, Key: key, AsParticipant: true}, false, func(base string) request {
						return request{Method: "POST", URL: agentURL(base, m.Inv.InvitationID, "events"),
							Header: hdr("Authorization", participantAuth(m.Token), "Idempotency-Key", key), Body: eventBody("comment", "through the outage", 1, m.Digest)}
					})
				}
				if a.Status != http.StatusOK && a.Status != http.StatusCreated {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	allSince := func(m *sync.Map, t0 time.Time) bool {
		for c := 0; c < clients; c++ {
			x, ok := m.Load(c)
			if !ok || !x.(time.Time).After(t0) {
				return false
			}
		}
		return true
	}
	var windows []*outageWindow
	outage := func(phase string, down, up func()) {
		time.Sleep(time.Second) // normal load before the outage
		down()
		w := &outageWindow{phase: phase, from: time.Now()}
		// Hold the outage until every client has seen it answered, and health says so.
		if !eventually(30*time.Second, func() bool { return allSince(&answeredSince, w.from.Add(dbBound+boundSlack)) }) {
			t.Errorf("database %s: not every client got an answer within 30s", phase)
		}
		for i, r := range v.c.Replicas {
			h := v.do(request{Method: "GET", URL: r.URL() + "/api/health", Timeout: outageClientTimeout})
			if m := healthMismatch(h); m != "" {
				t.Errorf("database %s: replica %d health: %s", phase, i, m)
			}
		}
		w.to = time.Now()
		up()
		back := time.Now()
		eventually(60*time.Second, func() bool {
			for _, r := range v.c.Replicas {
				if v.do(request{Method: "GET", URL: r.URL() + "/api/health", Timeout: 5 * time.Second}).Status != http.StatusOK {
					return false
				}
			}
			return true
		})
		w.recoveries = time.Since(back)
		if !eventually(60*time.Second, func() bool { return allSince(&okSince, back) }) {
			t.Errorf("database %s: the clients did not recover within 60s of PostgreSQL's return, without a restart", phase)
		}
		w.clientsBack = time.Since(back)
		windows = append(windows, w)
	}
	outage("stopped", func() { pg.Stop(t) }, func() { pg.Start(t) })
	outage("frozen", func() { pg.Freeze(t) }, func() { pg.Thaw(t) })
	time.Sleep(time.Second)
	stopLoad.Store(true)
	wg.Wait()

	// Every answer: 2xx or a 503; inside a window, a conforming 503.
	var bad []string
	seen := map[string]int{}
	for _, a := range l.led.snapshot() {
		r := &reply{Method: a.Kind, URL: a.Key, Status: a.Status, Sent: a.Sent, Received: a.Recv, Header: http.Header{}}
		if a.RetryAfter {
			r.Header.Set("Retry-After", "1")
		}
		if a.Err != "" {
			r.Err = fmt.Errorf("%s", a.Err)
		}
		in := ""
		for _, w := range windows {
			if !a.Sent.Before(w.from) && !a.Recv.After(w.to) {
				in = w.phase
			}
		}
		switch {
		case in != "":
			seen[in]++
			if a.Status != http.StatusServiceUnavailable || a.Code != "unavailable" || !a.RetryAfter || a.Elapsed > dbBound+boundSlack {
				bad = append(bad, fmt.Sprintf("database %s: %s %s answered %d %q after %v (Retry-After %v) %s",
					in, a.Kind, a.ParticipantID[:8], a.Status, a.Code, a.Elapsed.Round(time.Millisecond), a.RetryAfter, a.Err))
			}
		case a.Status == http.StatusServiceUnavailable:
		case a.Status >= 200 && a.Status < 300:
		default:
			bad = append(bad, fmt.Sprintf("around the outage: %s %s answered %d %q after %v %s", a.Kind, a.ParticipantID[:8], a.Status, a.Code, a.Elapsed.Round(time.Millisecond), a.Err))
		}
	}
	for _, w := range windows {
		if seen[w.phase] == 0 {
			t.Errorf("database %s: no request was sent and answered while it was down; the load did not see the outage", w.phase)
		}
		t.Logf("database %s for %v: %d requests answered inside it; health ok %v and every client served %v after PostgreSQL returned",
			w.phase, w.to.Sub(w.from).Round(time.Millisecond), seen[w.phase], w.recoveries.Round(time.Millisecond), w.clientsBack.Round(time.Millisecond))
	}
	if len(bad) > 0 {
		n := len(bad)
		if n > 30 {
			bad = append(bad[:30], fmt.Sprintf("… and %d more", n-30))
		}
		t.Errorf("%d answers are not a bounded 503:\n  %s", n, strings.Join(bad, "\n  "))
	}
	for _, r := range v.c.Replicas {
		if strings.Count(r.Logs(), "consensusd serving") != 1 {
			t.Errorf("replica %d restarted", r.Index)
		}
	}
	rep := l.verify(loadState(t, v.db))
	t.Logf("2 replicas, %d clients: %s", clients, rep)
}
