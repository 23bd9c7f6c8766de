package daemon_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/mailsink"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/secret"
)

// consensusd is a child process running the real binary.
type consensusd struct {
	cmd  *exec.Cmd
	addr string // the API listener
	ops  string // the operations listener
	mu   sync.Mutex
	logs bytes.Buffer
}

func buildConsensusd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "consensusd")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/consensusd").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startConsensusd runs bin with env and waits until it serves.
func startConsensusd(t *testing.T, bin string, env []string) *consensusd {
	t.Helper()
	d := &consensusd{cmd: exec.Command(bin)}
	d.cmd.Env = env
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.cmd.Process.Kill(); _ = d.cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Bytes()
			d.mu.Lock()
			d.logs.Write(line)
			d.logs.WriteByte('\n')
			d.mu.Unlock()
			var rec struct{ Msg, Listen, Ops string }
			if json.Unmarshal(line, &rec) == nil && rec.Msg == "consensusd serving" {
				d.mu.Lock()
				d.ops = rec.Ops
				d.mu.Unlock()
				ready <- rec.Listen
			}
		}
	}()
	select {
	case d.addr = <-ready:
	case <-time.After(30 * time.Second):
		d.mu.Lock()
		defer d.mu.Unlock()
		t.Fatalf("consensusd did not start in 30s:\n%s", d.logs.String())
	}
	return d
}

// kill sends SIGKILL: no shutdown code runs.
func (d *consensusd) kill(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = d.cmd.Wait()
}

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
// in flight at the kill. A job the killed process was running is made
// available again by the job queue's rescuer once its timeout (the send
// timeout, one minute, plus the record margin) has passed.
func TestSIGKILLWithPendingOutbox(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs consensusd")
	}
	const total, perAgreement, delay = 50, 10, 80 * time.Millisecond
	bin := buildConsensusd(t)
	sink, err := mailsink.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	sink.SetDelay(delay) // slow server: the kill lands mid-DATA
	operatorToken := secret.NewOperatorToken()
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"CONSENSUS_ENV=local", "DATABASE_URL=" + pgtest.URL(t),
		"CONSENSUS_TOKEN_KEY=" + strings.Repeat("ab", 32), "CONSENSUS_OPERATOR_TOKEN=" + operatorToken,
		"CONSENSUS_MAIL_URL=" + sink.SMTPURL(), "CONSENSUS_LISTEN=127.0.0.1:0", "CONSENSUS_OPS_LISTEN=127.0.0.1:0", "CONSENSUS_RATE_LIMIT=0",
		"CONSENSUS_OUTBOX_POLL=20ms",
	}

	first := startConsensusd(t, bin, env)
	queued := 0
	for queued < total {
		queued += createAgreement(t, first.addr, operatorToken, queued, perAgreement)
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
	first.kill(t)
	time.Sleep(2 * delay) // the in-flight DATA completes on the server side
	deliveredAtKill := len(sink.Messages())
	if deliveredAtKill >= total {
		t.Fatalf("all %d messages went out before the kill; slow the sink down", total)
	}

	startConsensusd(t, bin, env)
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
// for is there after a SIGKILL and a restart (R-SEC-4): it commits before it
// answers and keeps nothing that matters in memory.
func TestAcknowledgedWritesSurviveSIGKILL(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs consensusd")
	}
	bin := buildConsensusd(t)
	operatorToken := secret.NewOperatorToken()
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"CONSENSUS_ENV=local", "DATABASE_URL=" + pgtest.URL(t),
		"CONSENSUS_TOKEN_KEY=" + strings.Repeat("cd", 32), "CONSENSUS_OPERATOR_TOKEN=" + operatorToken,
		"CONSENSUS_MAIL_URL=maildir://" + filepath.Join(t.TempDir(), "mail"), "CONSENSUS_LISTEN=127.0.0.1:0", "CONSENSUS_OPS_LISTEN=127.0.0.1:0",
	}
	first := startConsensusd(t, bin, env)
	for i := 0; i < 5; i++ {
		createAgreement(t, first.addr, operatorToken, i, 1)
	}
	first.kill(t)
	second := startConsensusd(t, bin, env)
	req, _ := http.NewRequest(http.MethodGet, "http://"+second.addr+"/api/v1/admin/agreements", nil)
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
