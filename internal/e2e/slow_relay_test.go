package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/cli/consensusd"
	"github.com/consensus-md/consensus/internal/mailsink"
	"github.com/consensus-md/consensus/internal/servertest"
)

// relayDelay is how long the slow relay takes to accept each message:
// longer than the 30 s after which River's rescuer, and the job timeout
// of a worker without its own, used to cut or rerun a job.
const relayDelay = 70 * time.Second

// TestQueueSlowRelaySendsEachEmailOnce: through a relay that takes
// relayDelay to accept each message (the send timeout set longer, as an
// operator of such a relay would), two invitations and an enrollment
// link's email each arrive once, and no second DATA is ever begun: no job
// is cut short or run again while its send is still talking to the relay.
func TestQueueSlowRelaySendsEachEmailOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits for a relay that takes 70 s per message")
	}
	sink, err := mailsink.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	sink.SetDelay(relayDelay)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	tokenKey := hex.EncodeToString(key)
	s := startServer(t, servertest.Options{Mail: servertest.MailSMTP, Sink: sink, TokenKey: tokenKey, SendTimeout: relayDelay + 20*time.Second})

	s.create("Slow relay", s.future()) // two invitations
	// An enrollment link's email, as `consensusd workspace create` queues it.
	var out, errb bytes.Buffer
	env := map[string]string{"DATABASE_URL": s.DatabaseURL, "CONSENSUS_PUBLIC_ORIGIN": s.Origin, "CONSENSUS_TOKEN_KEY": tokenKey}
	if code := consensusd.Main(context.Background(), []string{"workspace", "create", "--name", "slow", "--owner-email", "owner@slow.example"},
		consensusd.Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}); code != 0 {
		t.Fatalf("consensusd workspace create: exit %d\n%s%s", code, out.String(), errb.String())
	}
	const want = 3

	deadline := time.Now().Add(relayDelay + time.Minute)
	for len(sink.Messages()) < want && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // a message sent twice would begin its DATA by now
	msgs := sink.Messages()
	seen := map[string]int{}
	for _, m := range msgs {
		seen[m.MessageID]++
	}
	if len(seen) != want || len(msgs) != want {
		t.Fatalf("%d messages accepted, %d distinct (%v); want %d, each once", len(msgs), len(seen), seen, want)
	}
	if n := sink.Attempts(); n != want {
		t.Fatalf("%d DATA commands begun for %d messages: a job was cut short or run again", n, want)
	}
}
