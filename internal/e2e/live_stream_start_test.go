package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/servertest"
)

// A stream whose first read fails answers with that failure's problem (503
// unavailable with Retry-After, as every route does when the database is
// too slow), not with a 200 whose body ends at once: a client could not
// tell that from a stream the server closed, and would not know to wait.
// Once the database answers again, the stream opens.
func TestLiveStreamAnswersAFailedFirstReadWithItsProblem(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertest.Options{Settings: map[string]string{"CONSENSUS_DB_TIMEOUT": "1s"}})
	c := s.create("Stream start", s.future(), participantSpec{"Agent", "agent", true})
	a := s.agent(c.Participants[0].InvitationID).join()

	// The token's lookup reads participants and agreements; the stream's
	// first page reads events, which wait for this lock past the timeout.
	tx := holdInTx(t, s, `LOCK TABLE events IN ACCESS EXCLUSIVE MODE`)

	req, err := http.NewRequest("GET", s.URL+s.agentPath(a.inv.InvitationID, "stream"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Consensus-Participant "+a.token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusServiceUnavailable ||
		!strings.HasPrefix(ct, "application/problem+json") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("stream while the database is too slow: status %d, Content-Type %q, Retry-After %q; want 503 problem with Retry-After",
			resp.StatusCode, ct, resp.Header.Get("Retry-After"))
	}

	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	sse := newSSE(t, a, 0)
	if err := sse.open(); err != nil {
		t.Fatalf("stream once the database answers: %v", err)
	}
	defer sse.close()
	if m, err := sse.next(); err != nil || m.event != "room.outcome" {
		t.Fatalf("first message %+v, %v; want room.outcome", m, err)
	}
}
