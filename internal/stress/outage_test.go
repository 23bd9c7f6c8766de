package stress

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/proctest"
)

// The database-failure bound: 5 s by default. The tests set
// CONSENSUS_DB_TIMEOUT=2s (the setting the fix is expected to add) but
// hold the service only to the default, so a differently named setting
// still passes; the log says whether 2 s was honoured.
const (
	dbTimeoutSetting = "2s"
	dbBound          = 5 * time.Second
	// boundSlack absorbs scheduling on a shared two-core machine.
	boundSlack = 2 * time.Second
	// outageClientTimeout cuts a request that hangs (today's behaviour
	// with a frozen database) so the failure is reported, not waited out.
	outageClientTimeout = 12 * time.Second
)

// outageFixture is one agreement with a participant in every stage, so
// every route has a valid credential to present while the database is gone.
type outageFixture struct {
	v          *venue
	base       string
	agreement  string
	joined     *member // claimed: room, events, artifact
	exchanged  *member // has a session, not claimed: claim
	invitedOne *member // has only its email: exchange, revoke, resend
	invitedPID string
}

func newOutageFixture(t *testing.T, v *venue) *outageFixture {
	t.Helper()
	base := v.url(0)
	ag := v.create(t, base, agreementBody("Outage", "Hold records through an outage.", nil,
		spec{Name: "Joined", Required: true}, spec{Name: "Exchanged", Required: true}, spec{Name: "Invited", Required: true}))
	f := &outageFixture{v: v, base: base, agreement: ag.AgreementID, invitedPID: ag.Participants[2].ParticipantID}
	f.joined = v.join(t, base, ag.Participants[0].InvitationID)
	f.exchanged = v.invited(t, ag.Participants[1].InvitationID)
	v.exchange(t, base, f.exchanged)
	f.invitedOne = v.invited(t, ag.Participants[2].InvitationID)
	wantStatus(t, "comment", v.postEvent(base, f.joined, "before-outage-1", "comment", "before"), http.StatusCreated)
	settleOutbox(t, v.db)
	return f
}

type namedRequest struct {
	name string
	req  request
}

// dbRoutes is one request to every route that needs the database, each
// with a valid credential; base is the replica to send to.
func (f *outageFixture) dbRoutes(base, tag string) []namedRequest {
	v := f.v
	j, x, n := f.joined, f.exchanged, f.invitedOne
	pauth := hdr("Authorization", participantAuth(j.Token))
	return []namedRequest{
		{"exchange", request{Method: "POST", URL: agentURL(base, n.Inv.InvitationID, "exchange"), Body: exchangeBody(n.Inv.Secret)}},
		{"claim", request{Method: "POST", URL: agentURL(base, x.Inv.InvitationID, "claim"), Header: hdr("Authorization", "Consensus-Session "+x.Session), Body: claimBody(x.Inv.Proof, x.Inv.Inbox)}},
		{"room", request{Method: "GET", URL: agentURL(base, j.Inv.InvitationID, "room"), Header: pauth}},
		{"events", request{Method: "POST", URL: agentURL(base, j.Inv.InvitationID, "events"),
			Header: hdr("Authorization", participantAuth(j.Token), "Idempotency-Key", "outage-"+tag), Body: eventBody("comment", "during the outage", 1, j.Digest)}},
		{"artifact", request{Method: "GET", URL: agentURL(base, j.Inv.InvitationID, "artifact"), Header: pauth}},
		{"admin create", request{Method: "POST", URL: base + "/api/v1/admin/agreements", Header: v.opHeader(),
			Body: agreementBody("During the outage", "Must not be stored.", nil, spec{Name: "X", Required: true})}},
		{"admin list", request{Method: "GET", URL: base + "/api/v1/admin/agreements", Header: v.opHeader()}},
		{"admin get", request{Method: "GET", URL: base + "/api/v1/admin/agreements/" + f.agreement, Header: v.opHeader()}},
		{"admin revoke", request{Method: "POST", URL: base + "/api/v1/admin/participants/" + f.invitedPID + "/revoke", Header: v.opHeader()}},
		{"admin resend", request{Method: "POST", URL: base + "/api/v1/admin/invitations/" + n.Inv.InvitationID + "/resend", Header: v.opHeader()}},
	}
}

// unavailableMismatch says how r differs from the outage answer: a 503
// problem with code unavailable and a Retry-After, within the bound.
func unavailableMismatch(r *reply) string {
	var why []string
	if m := problemMismatch(r, http.StatusServiceUnavailable, "unavailable"); m != "" {
		why = append(why, m)
	}
	if r.Err == nil {
		if _, ok := retryAfter(r.Header); !ok {
			why = append(why, fmt.Sprintf("no valid Retry-After (got %q)", r.Header.Get("Retry-After")))
		}
		if r.Status == http.StatusUnauthorized {
			why = append(why, "a database failure reported as a bad credential")
		}
	}
	if r.Elapsed() > dbBound+boundSlack {
		why = append(why, fmt.Sprintf("answered after %v, the bound is %v", r.Elapsed().Round(time.Millisecond), dbBound))
	}
	return strings.Join(why, "; ")
}

// healthMismatch says how a health answer differs from "database down".
func healthMismatch(r *reply) string {
	if r.Err != nil {
		return r.String()
	}
	var h struct{ Status, Database string }
	_ = json.Unmarshal(r.Body, &h)
	var why []string
	if r.Status != http.StatusServiceUnavailable {
		why = append(why, fmt.Sprintf("status %d, want 503", r.Status))
	}
	if h.Database == "" || h.Database == "ok" {
		why = append(why, fmt.Sprintf("database %q, want it reported down", h.Database))
	}
	if r.Elapsed() > dbBound+boundSlack {
		why = append(why, fmt.Sprintf("answered after %v", r.Elapsed().Round(time.Millisecond)))
	}
	if len(why) == 0 {
		return ""
	}
	return strings.Join(why, "; ") + " — " + r.String()
}

// probeOutage sends every route's request (and health) at once and
// reports each answer that is not a bounded 503.
func probeOutage(t *testing.T, f *outageFixture, base, phase string) {
	t.Helper()
	probeOutageWithin(t, f, base, phase, 0)
}

// probeOutageWithin is probeOutage where, when fast is not zero, every
// route that needs the database (health aside: it asks the database
// itself) must also answer within fast.
func probeOutageWithin(t *testing.T, f *outageFixture, base, phase string, fast time.Duration) {
	t.Helper()
	reqs := f.dbRoutes(base, phase)
	reqs = append(reqs, namedRequest{"health", request{Method: "GET", URL: base + "/api/health"}})
	replies := make([]*reply, len(reqs))
	var wg sync.WaitGroup
	for i, nr := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nr.req.Timeout = outageClientTimeout
			replies[i] = f.v.do(nr.req)
		}()
	}
	wg.Wait()
	var slowest time.Duration
	for i, nr := range reqs {
		r := replies[i]
		var m string
		if nr.name == "health" {
			m = healthMismatch(r)
		} else {
			m = unavailableMismatch(r)
		}
		if m != "" {
			t.Errorf("database %s: %s: %s", phase, nr.name, m)
		}
		if fast > 0 && nr.name != "health" && r.Elapsed() >= fast {
			t.Errorf("database %s: %s answered after %v, not within %v of a database already seen to time out", phase, nr.name, r.Elapsed().Round(time.Millisecond), fast)
		}
		slowest = max(slowest, r.Elapsed())
	}
	honoured := "within"
	if slowest > 2*time.Second+boundSlack {
		honoured = "beyond"
	}
	t.Logf("database %s: slowest answer %v (%s the %s setting)", phase, slowest.Round(time.Millisecond), honoured, dbTimeoutSetting)
}

// awaitRecovery polls until health says ok and the room reads again, and
// returns how long that took.
func awaitRecovery(t *testing.T, f *outageFixture, base, after string) time.Duration {
	t.Helper()
	start := time.Now()
	var last *reply
	ok := eventually(60*time.Second, func() bool {
		last = f.v.do(request{Method: "GET", URL: base + "/api/health", Timeout: 5 * time.Second})
		if last.Status != http.StatusOK {
			return false
		}
		last = f.v.do(request{Method: "GET", URL: agentURL(base, f.joined.Inv.InvitationID, "room"), Header: hdr("Authorization", participantAuth(f.joined.Token)), Timeout: 5 * time.Second})
		return last.Status == http.StatusOK
	})
	if !ok {
		t.Fatalf("no recovery within 60s after %s without a restart; last answer %s", after, last)
	}
	d := time.Since(start)
	t.Logf("recovered %v after %s", d.Round(time.Millisecond), after)
	return d
}

// TestDefect2DatabaseOutageIsUnavailable: with PostgreSQL
// stopped, and then frozen (SIGSTOP), every route that needs the database
// answers 503 problem+json code unavailable with Retry-After within the
// bound (and, once the database has been seen to time out, in under a
// second), /api/health reports the database down, nothing is stored, and the
// service recovers by itself. Today a stopped database makes room, events
// and claim answer 401 (the client concludes its token is revoked),
// exchange and the operator routes 500, with no Retry-After; a frozen one
// makes every request hang.
func TestDefect2DatabaseOutageIsUnavailable(t *testing.T) {
	t.Parallel()
	pg := proctest.StartPostgres(t)
	v := newVenue(t, venueOpts{dbURL: pg.URL(), env: map[string]string{"CONSENSUS_DB_TIMEOUT": dbTimeoutSetting}})
	f := newOutageFixture(t, v)
	base := f.base
	before := tableDigests(t, v.db)

	pg.Stop(t)
	probeOutage(t, f, base, "stopped")
	pg.Start(t)
	awaitRecovery(t, f, base, "PostgreSQL restarted")

	pg.Freeze(t)
	probeOutage(t, f, base, "frozen")
	// Once the service has seen the database time out, it answers at once
	// until the database answers again.
	probeOutageWithin(t, f, base, "still frozen", time.Second)
	probeOutageWithin(t, f, base, "still frozen, again", time.Second)
	pg.Thaw(t)
	awaitRecovery(t, f, base, "PostgreSQL thawed")

	if ch := changedTables(before, tableDigests(t, v.db)); len(ch) > 0 {
		t.Errorf("requests refused during the outage changed the database: %s", strings.Join(ch, ", "))
	}
	// Everything works again, on every route.
	wantStatus(t, "events after recovery", v.postEvent(base, f.joined, "after-outage-1", "comment", "after"), http.StatusCreated)
	wantStatus(t, "exchange after recovery", v.post(agentURL(base, f.invitedOne.Inv.InvitationID, "exchange"), nil, exchangeBody(f.invitedOne.Inv.Secret)), http.StatusOK)
	checkInvariants(t, v)
}
