package outbox_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/mail"
	"github.com/consensus-md/consensus/internal/mailsink"
	"github.com/consensus-md/consensus/internal/outbox"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/venue"
	"github.com/consensus-md/consensus/internal/workspace"
)

// fixture is a fresh database, a venue over it and a real SMTP server.
type fixture struct {
	st    *store.Store
	keys  *secret.Keys
	venue *venue.Venue
	sink  *mailsink.Server
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st := pgtest.Store(t)
	master := make([]byte, 32)
	_, _ = rand.Read(master)
	keys, err := secret.DeriveKeys(master)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := mailsink.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	return &fixture{st: st, keys: keys, sink: sink,
		venue: &venue.Venue{Store: st, Keys: keys, Origin: "https://consensus.test", Now: time.Now}}
}

// worker is a real outbox worker sending to the fixture's SMTP server, with
// retries due almost at once.
func (f *fixture) worker(t *testing.T) *outbox.Worker {
	t.Helper()
	tr, err := mail.Open(f.sink.SMTPURL(), mail.Options{DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return &outbox.Worker{
		Store: f.st, Keys: f.keys, Transport: tr, From: "Consensus <consensus@consensus.test>",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Poll: 10 * time.Millisecond,
		BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, SendTimeout: 10 * time.Second,
	}
}

// agreement queues n invitation emails.
func (f *fixture) agreement(t *testing.T, n int) *venue.Created {
	t.Helper()
	in := venue.CreateInput{Title: "Outbox test", Objective: "Deliver every invitation once.",
		Deadline: time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)}
	yes := true
	for i := range n {
		in.Participants = append(in.Participants, venue.ParticipantInput{
			DisplayName: fmt.Sprintf("Agent %d", i), Kind: "agent", Email: fmt.Sprintf("agent%d@example.test", i), Required: &yes})
	}
	c, err := f.venue.CreateAgreement(context.Background(), venue.OperatorCall{Principal: workspace.Bootstrap()}, in)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// deliveries returns the operator's view of every email of the agreement.
func (f *fixture) deliveries(t *testing.T, agreementID string) []venue.Delivery {
	t.Helper()
	d, err := f.venue.GetAgreement(context.Background(), venue.OperatorCall{Principal: workspace.Bootstrap()}, agreementID)
	if err != nil {
		t.Fatal(err)
	}
	var out []venue.Delivery
	for _, p := range d.Participants {
		out = append(out, p.Deliveries...)
	}
	return out
}

func (f *fixture) attempts(t *testing.T, agreementID string) int {
	t.Helper()
	rows, err := f.st.OutboxAttemptListByAgreement(context.Background(), mustUUID(t, agreementID))
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

// deliverUntilIdle calls DeliverOne until nothing is due, waiting out short backoffs.
func deliverUntilIdle(t *testing.T, w *outbox.Worker) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	idle := 0
	for idle < 3 {
		if time.Now().After(deadline) {
			t.Fatal("outbox did not drain in 10s")
		}
		found, err := w.DeliverOne(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if found {
			idle = 0
			continue
		}
		idle++
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDeliverSuccess(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.agreement(t, 1)
	deliverUntilIdle(t, f.worker(t))
	msgs := f.sink.Messages()
	if len(msgs) != 1 || msgs[0].To != "agent0@example.test" {
		t.Fatalf("sink got %+v", msgs)
	}
	if !strings.Contains(string(msgs[0].Data), "---BEGIN CONSENSUS INVITATION V1---") {
		t.Fatal("message lacks the invitation block")
	}
	d := f.deliveries(t, c.AgreementID)
	if len(d) != 1 || d[0].State != "sent" || d[0].Attempts != 1 || d[0].SentAt == nil || d[0].LastReply == nil || !strings.HasPrefix(*d[0].LastReply, "250") {
		t.Fatalf("delivery %+v", d)
	}
	if msgs[0].MessageID != d[0].MessageID {
		t.Fatalf("Message-ID %q, recorded %q", msgs[0].MessageID, d[0].MessageID)
	}
}

func TestDeliverTemporaryThenSuccess(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.agreement(t, 1)
	f.sink.FailNext(mailsink.Temporary)
	w := f.worker(t)
	if found, err := w.DeliverOne(context.Background()); !found || err != nil {
		t.Fatalf("first attempt: found %v, err %v", found, err)
	}
	d := f.deliveries(t, c.AgreementID)
	if d[0].State != "retrying" || d[0].Attempts != 1 || d[0].LastReply == nil || !strings.Contains(*d[0].LastReply, "451") {
		t.Fatalf("after a 451: %+v", d[0])
	}
	deliverUntilIdle(t, w)
	d = f.deliveries(t, c.AgreementID)
	if d[0].State != "sent" || d[0].Attempts != 2 {
		t.Fatalf("after the retry: %+v", d[0])
	}
	if n := len(f.sink.Messages()); n != 1 {
		t.Fatalf("sink accepted %d messages, want 1", n)
	}
	if n := f.attempts(t, c.AgreementID); n != 2 {
		t.Fatalf("%d attempts recorded, want 2", n)
	}
}

func TestDeliverPermanentFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.agreement(t, 1)
	f.sink.FailNext(mailsink.Permanent)
	deliverUntilIdle(t, f.worker(t))
	d := f.deliveries(t, c.AgreementID)
	if d[0].State != "failed" || d[0].Attempts != 1 || d[0].LastReply == nil || !strings.Contains(*d[0].LastReply, "550") {
		t.Fatalf("after a 550: %+v", d[0])
	}
	if n := len(f.sink.Messages()); n != 0 {
		t.Fatalf("sink accepted %d messages", n)
	}
	if n := f.sink.Attempts(); n != 1 {
		t.Fatalf("%d DATA attempts, want 1 (no retry after 5xx)", n)
	}
}

func TestDeliverConnectionDroppedMidDataIsRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.agreement(t, 1)
	f.sink.DropNext(1)
	w := f.worker(t)
	if found, err := w.DeliverOne(context.Background()); !found || err != nil {
		t.Fatalf("first attempt: found %v, err %v", found, err)
	}
	if d := f.deliveries(t, c.AgreementID); d[0].State != "retrying" {
		t.Fatalf("after a dropped connection: %+v", d[0])
	}
	deliverUntilIdle(t, w)
	if d := f.deliveries(t, c.AgreementID); d[0].State != "sent" || d[0].Attempts != 2 {
		t.Fatalf("after the retry: %+v", d[0])
	}
	if n := len(f.sink.Messages()); n != 1 {
		t.Fatalf("sink accepted %d messages, want 1", n)
	}
}

func TestTwoWorkersRaceForOneRow(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.agreement(t, 1)
	f.sink.SetDelay(300 * time.Millisecond) // both workers arrive while the row is locked
	w1, w2 := f.worker(t), f.worker(t)
	var wg sync.WaitGroup
	found := make([]bool, 2)
	start := make(chan struct{})
	for i, w := range []*outbox.Worker{w1, w2} {
		wg.Go(func() {
			<-start
			ok, err := w.DeliverOne(context.Background())
			if err != nil {
				t.Error(err)
			}
			found[i] = ok
		})
	}
	close(start)
	wg.Wait()
	if found[0] == found[1] {
		t.Fatalf("found = %v: exactly one worker should have taken the row", found)
	}
	if n := len(f.sink.Messages()); n != 1 {
		t.Fatalf("sink accepted %d messages, want 1", n)
	}
	if d := f.deliveries(t, c.AgreementID); d[0].State != "sent" || d[0].Attempts != 1 {
		t.Fatalf("delivery %+v", d[0])
	}
}

func TestManyWorkersDeliverEachMessageOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.agreement(t, 20)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		w := f.worker(t)
		wg.Go(func() { w.Run(ctx) })
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(f.sink.Messages()) < 20 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // a duplicate would arrive now
	cancel()
	wg.Wait()
	seen := map[string]int{}
	for _, m := range f.sink.Messages() {
		seen[m.MessageID]++
	}
	if len(seen) != 20 {
		t.Fatalf("%d distinct messages, want 20", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s delivered %d times", id, n)
		}
	}
	for _, d := range f.deliveries(t, c.AgreementID) {
		if d.State != "sent" {
			t.Errorf("delivery %+v", d)
		}
	}
}

func mustUUID(t *testing.T, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
