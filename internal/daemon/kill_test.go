package daemon_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/mailsink"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/proctest"
)

// createAgreement posts to the operator API and returns the queued emails' count.
func createAgreement(t *testing.T, addr, operatorToken string, first, n int) int {
	t.Helper()
	type participant struct {
		DisplayName string `json:"displayName"`
		Kind        string `json:"kind"`
		Email       string `json:"email"`
		Required    bool   `json:"required"`
	}
	body := map[string]any{
		"title": "Kill test", "objective": "Deliver every invitation despite a SIGKILL.", "rules": []string{},
		"deadline": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339),
	}
	var ps []participant
	for i := first; i < first+n; i++ {
		ps = append(ps, participant{fmt.Sprintf("Agent %d", i), "agent", fmt.Sprintf("agent%d@example.test", i), true})
	}
	body["participants"] = ps
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/admin/agreements", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var created struct{ Participants []json.RawMessage }
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&created) != nil {
		t.Fatalf("create agreement: HTTP %d", resp.StatusCode)
	}
	return len(created.Participants)
}

// TestSIGKILLWithPendingOutbox kills consensusd while its outbox holds 50
// pending invitations, restarts it, and counts what the SMTP server got:
// every message arrives, and a duplicate is at most a message a worker had
// in flight at the kill. A job the killed process was running stays
// running in River's table until the leader's rescuer, which looks every
// 30 s, finds it running for longer than RescueStuckJobsAfter (the longest
// job timeout, an email's one-minute send timeout plus its record margin,
// plus the rescue margin: 105 s) and schedules it again at the worker's
// NextRetry.
func TestSIGKILLWithPendingOutbox(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs consensusd")
	}
	const total, perAgreement, delay = 50, 10, 80 * time.Millisecond
	sink, err := mailsink.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	sink.SetDelay(delay) // slow server: the kill lands mid-DATA
	c := proctest.Start(t, proctest.Config{DatabaseURL: pgtest.URL(t), MailURL: sink.SMTPURL(),
		Env: map[string]string{"CONSENSUS_OUTBOX_POLL": "20ms"}}, 1)
	d, operatorToken := c.Replicas[0], c.Config.OperatorToken
	queued := 0
	for queued < total {
		queued += createAgreement(t, d.Addr(), operatorToken, queued, perAgreement)
	}
	// Let a few go out, then kill in the middle of a DATA.
	for len(sink.Messages()) < 5 {
		time.Sleep(5 * time.Millisecond)
	}
	before := sink.Attempts()
	for sink.Attempts() == before {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(delay / 2)
	d.Kill(t)
	time.Sleep(2 * delay) // the in-flight DATA completes on the server side
	deliveredAtKill := len(sink.Messages())
	if deliveredAtKill >= total {
		t.Fatalf("all %d messages went out before the kill; slow the sink down", total)
	}

	d.Restart(t)
	deadline := time.Now().Add(4 * time.Minute)
	distinct := map[string]int{}
	for time.Now().Before(deadline) {
		clear(distinct)
		for _, m := range sink.Messages() {
			distinct[m.MessageID]++
		}
		if len(distinct) == total {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // anything sent twice would show up now
	clear(distinct)
	msgs := sink.Messages()
	for _, m := range msgs {
		distinct[m.MessageID]++
	}
	duplicates := len(msgs) - len(distinct)
	t.Logf("queued %d, delivered before the kill %d, distinct delivered %d, total accepted %d, duplicates %d",
		total, deliveredAtKill, len(distinct), len(msgs), duplicates)
	if len(distinct) != total {
		t.Fatalf("%d distinct messages delivered, want %d", len(distinct), total)
	}
	// At most one message per email worker (four) was in flight at the kill.
	if duplicates > 4 {
		t.Fatalf("%d duplicates; only the messages in flight (at most four) may repeat", duplicates)
	}
	for id, n := range distinct {
		if n > 2 {
			t.Errorf("%s delivered %d times", id, n)
		}
	}
}

// TestAcknowledgedWritesSurviveSIGKILL: everything the service answered 201
// for is there after a SIGKILL and a restart: it commits before it answers
// and keeps nothing that matters in memory.
func TestAcknowledgedWritesSurviveSIGKILL(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs consensusd")
	}
	c := proctest.Start(t, proctest.Config{DatabaseURL: pgtest.URL(t)}, 1)
	d, operatorToken := c.Replicas[0], c.Config.OperatorToken
	for i := 0; i < 5; i++ {
		createAgreement(t, d.Addr(), operatorToken, i, 1)
	}
	d.Kill(t)
	d.Restart(t)
	req, _ := http.NewRequest(http.MethodGet, d.URL()+"/api/v1/admin/agreements", nil)
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct{ Agreements []json.RawMessage }
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	if len(page.Agreements) != 5 {
		t.Fatalf("%d agreements after the restart, want the 5 acknowledged", len(page.Agreements))
	}
}
