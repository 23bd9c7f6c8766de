package outbox_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/consensus-md/consensus/internal/jobs"
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
	url   string
	st    *store.Store
	keys  *secret.Keys
	venue *venue.Venue
	sink  *mailsink.Server
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	url := pgtest.URL(t)
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
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
	return &fixture{url: url, st: st, keys: keys, sink: sink,
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
		Log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
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

// run starts a River client, as a replica's, that works the email queue
// with w until the test ends.
func (f *fixture) run(t *testing.T, w *outbox.Worker) {
	t.Helper()
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	c, err := river.NewClient(riverpgxv5.New(f.st.Pool()), &river.Config{
		Queues:        map[string]river.QueueConfig{jobs.QueueEmail: {MaxWorkers: 4}},
		Workers:       workers,
		FetchCooldown: 5 * time.Millisecond, FetchPollInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Stop(ctx)
	})
}

// waitFor waits until every delivery of the agreement is in a final state
// (sent or failed) and returns them.
func (f *fixture) waitFor(t *testing.T, agreementID string) []venue.Delivery {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		d := f.deliveries(t, agreementID)
		done := len(d) > 0
		for _, x := range d {
			done = done && (x.State == "sent" || x.State == "failed")
		}
		if done {
			time.Sleep(100 * time.Millisecond) // a duplicate would arrive now
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries not final after 20s: %+v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// queued lists the agreement's outbox messages.
func (f *fixture) queued(t *testing.T, agreementID string) []store.OutboxMessage {
	t.Helper()
	list, err := f.st.OutboxListByAgreement(context.Background(), mustUUID(t, agreementID))
	if err != nil || len(list) == 0 {
		t.Fatalf("outbox %+v, %v", list, err)
	}
	return list
}

func mustUUID(t *testing.T, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
