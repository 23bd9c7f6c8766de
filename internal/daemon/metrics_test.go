package daemon_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/servertest"
)

// TestMetricsAfterTraffic: a running consensusd's /metrics counts the
// requests by route pattern, the deliveries and the pool, reports the
// outbox drained and ready, and carries none of the ids or credentials
// the traffic involved. /livez and /readyz answer on the same listener.
func TestMetricsAfterTraffic(t *testing.T) {
	t.Parallel()
	s := servertest.New(t, servertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	created, err := s.CreateAgreement(ctx, servertest.Agreement{
		Title: "Metrics", Objective: "Count without ids.", Deadline: time.Now().Add(time.Hour),
		Participants: []servertest.Participant{
			{DisplayName: "A", Kind: "agent", Email: "a@example.test", Required: true},
			{DisplayName: "B", Kind: "agent", Email: "b@example.test", Required: false},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitForMail(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// A request whose path carries an id that exists nowhere.
	resp, err := http.Get(s.URL + "/api/v1/agent/invitations/0b7e7a36-4f5c-4d3e-9a41-7c2f1e0d9b8a/room")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	get := func(path string) (int, string) {
		resp, err := http.Get(s.OpsURL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/livez"); code != 200 || !strings.Contains(body, `"live"`) {
		t.Fatalf("/livez: %d %s", code, body)
	}
	if code, body := get("/readyz"); code != 200 || !strings.Contains(body, `"ready"`) {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	var metrics string
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, metrics = get("/metrics")
		// The worker commits the second delivery just after the mail lands.
		if strings.Contains(metrics, `consensus_mail_delivery_attempts_total{result="sent"} 2`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range []string{
		`consensus_http_requests_total{method="POST",route="/api/v1/admin/agreements",status="201"} 1`,
		`consensus_http_requests_total{method="GET",route="/api/v1/agent/invitations/{invitationId}/room",status="401"} 1`,
		`consensus_mail_delivery_attempts_total{result="sent"} 2`,
		"consensus_outbox_depth 0",
		"consensus_db_pool_max_conns ",
		`consensus_build_info{goversion="`,
		"consensus_room_cache_limit_bytes ",
		`consensus_room_cache_reads_total{result="whole"} `,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if uuid := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`).FindString(metrics); uuid != "" {
		t.Errorf("/metrics carries an id: %s", uuid)
	}
	for _, secret := range []string{s.OperatorToken, created.AgreementID, "csi_", "css_", "csp_", "a@example.test"} {
		if strings.Contains(metrics, secret) {
			t.Errorf("/metrics carries %q", secret)
		}
	}
}
