package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/httpapi"
	"github.com/consensus-md/consensus/internal/proctest"
	"github.com/consensus-md/consensus/internal/servertest"
	"github.com/consensus-md/consensus/internal/venue"
)

// TestDatabaseOutageAnswersUnavailable: with
// PostgreSQL stopped, and then frozen (SIGSTOP), every route that needs the
// database answers 503 unavailable with Retry-After within the configured
// timeout, never 401, 404 or 500; health says the database is down; and the
// same server recovers once PostgreSQL is back. The cluster is this test's
// own.
func TestDatabaseOutageAnswersUnavailable(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	pg := proctest.StartPostgres(t)
	ctx := context.Background()
	s := startServer(t, servertest.Options{DatabaseURL: pg.URL(), Settings: map[string]string{"CONSENSUS_DB_TIMEOUT": timeout.String()}})

	// One participant claimed (room, events, artifact), one exchanged
	// (claim), every credential valid.
	env := s.invitation(t)
	base := "/api/v1/agent/invitations/" + env.InvitationID
	sec := env.InviteURI[strings.Index(env.InviteURI, "#secret=")+len("#secret="):]
	exchange := []byte(fmt.Sprintf(`{"secret":%q}`, sec))
	var ex venue.Exchanged
	if err := json.Unmarshal(s.mustStatus(t, 200, http.MethodPost, base+"/exchange", exchange), &ex); err != nil {
		t.Fatal(err)
	}
	session := []string{"Authorization", "Consensus-Session " + ex.SessionToken}
	claim := []byte(fmt.Sprintf(`{"emailProof":%q,"inbox":%q}`, env.AgentClaim.EmailProof, env.Inbox))
	var cl venue.Claimed
	if err := json.Unmarshal(s.mustStatus(t, 200, http.MethodPost, base+"/claim", claim, session...), &cl); err != nil {
		t.Fatal(err)
	}
	participant := "Consensus-Participant " + cl.ParticipantToken
	op := "Bearer " + s.srv.OperatorToken
	type route struct {
		method, path string
		body         []byte
		headers      []string
	}
	routes := map[string]route{
		"exchange":     {http.MethodPost, base + "/exchange", exchange, nil},
		"claim":        {http.MethodPost, base + "/claim", claim, session},
		"room":         {http.MethodGet, base + "/room", nil, []string{"Authorization", participant}},
		"events":       {http.MethodPost, base + "/events", []byte(fmt.Sprintf(`{"action":"comment","body":"x","revision":1,"digest":%q}`, env.Revision.Digest)), []string{"Authorization", participant, "Idempotency-Key", "outage-0001"}},
		"artifact":     {http.MethodGet, base + "/artifact", nil, []string{"Authorization", participant}},
		"admin create": {http.MethodPost, "/api/v1/admin/agreements", []byte(`{"title":"T","objective":"o","deadline":"2099-01-01T00:00:00Z","participants":[{"displayName":"A","kind":"agent","email":"a@agents.example","required":true}]}`), []string{"Authorization", op}},
		"admin list":   {http.MethodGet, "/api/v1/admin/agreements", nil, []string{"Authorization", op}},
		"admin get":    {http.MethodGet, "/api/v1/admin/agreements/" + env.AgreementID, nil, []string{"Authorization", op}},
		"admin revoke": {http.MethodPost, "/api/v1/admin/participants/" + cl.ParticipantID + "/revoke", nil, []string{"Authorization", op}},
		"admin resend": {http.MethodPost, "/api/v1/admin/invitations/" + env.InvitationID + "/resend", nil, []string{"Authorization", op}},
	}
	// limit is how long one answer may take: the timeout, or under a second
	// once the server has seen the database time out.
	probe := func(phase string, limit time.Duration) {
		t.Helper()
		var wg sync.WaitGroup
		for name, r := range routes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A client timeout turns a hang into a failure.
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				req, err := http.NewRequestWithContext(rctx, r.method, s.origin+r.path, bytes.NewReader(r.body))
				if err != nil {
					t.Error(err)
					return
				}
				req.Header.Set("Content-Type", "application/json")
				for i := 0; i+1 < len(r.headers); i += 2 {
					req.Header.Set(r.headers[i], r.headers[i+1])
				}
				start := time.Now()
				resp, err := s.client.Do(req)
				took := time.Since(start)
				if err != nil {
					t.Errorf("database %s: %s: no answer after %v: %v", phase, name, took, err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var p httpapi.Problem
				_ = json.Unmarshal(body, &p)
				retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
				if resp.StatusCode != http.StatusServiceUnavailable || p.Code != "unavailable" || err != nil || retry < 1 {
					t.Errorf("database %s: %s: %d %q (Retry-After %q), want 503 unavailable with Retry-After", phase, name, resp.StatusCode, p.Code, resp.Header.Get("Retry-After"))
				}
				if took > limit {
					t.Errorf("database %s: %s answered after %v, over %v", phase, name, took, limit)
				}
			}()
		}
		wg.Wait()
		resp, body := s.do(t, http.MethodGet, "/api/health", nil)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"status":"unavailable"`) {
			t.Errorf("database %s: health %d %s", phase, resp.StatusCode, body)
		}
	}
	recovered := func(phase string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			resp, _ := s.do(t, http.MethodGet, base+"/room", nil, "Authorization", participant)
			if resp.StatusCode == http.StatusOK {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the room still answers %d 30s after PostgreSQL %s", resp.StatusCode, phase)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	pg.Stop(t)
	probe("stopped", timeout+time.Second)
	pg.Start(t)
	recovered("restarted")
	pg.Freeze(t)
	probe("frozen", timeout+time.Second)
	// The server has seen the database time out: it answers at once until
	// the database answers again, rather than each request waiting out the
	// timeout.
	probe("still frozen", time.Second)
	probe("still frozen, again", time.Second)
	pg.Thaw(t)
	recovered("thawed")
	// Nothing the outage refused was stored: the key is still free.
	s.mustStatus(t, http.StatusCreated, routes["events"].method, routes["events"].path, routes["events"].body, routes["events"].headers...)
}
