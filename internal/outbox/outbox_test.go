package outbox_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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

func TestDeliverSuccess(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.agreement(t, 1)
	f.run(t, f.worker(t))
	d := f.waitFor(t, c.AgreementID)
	msgs := f.sink.Messages()
	if len(msgs) != 1 || msgs[0].To != "agent0@example.test" {
		t.Fatalf("sink got %+v", msgs)
	}
	if !strings.Contains(string(msgs[0].Data), "---BEGIN CONSENSUS INVITATION V1---") {
		t.Fatal("message lacks the invitation block")
	}
	if len(d) != 1 || d[0].State != "sent" || d[0].Attempts != 1 || d[0].SentAt == nil || d[0].LastReply == nil || !strings.HasPrefix(*d[0].LastReply, "250") {
		t.Fatalf("delivery %+v", d)
	}
	if msgs[0].MessageID != d[0].MessageID {
		t.Fatalf("Message-ID %q, recorded %q", msgs[0].MessageID, d[0].MessageID)
	}
	f.bodiesErased(t, c.AgreementID)
}

// bodiesErased checks that no sealed body is left once every email of the
// agreement is sent or given up.
func (f *fixture) bodiesErased(t *testing.T, agreementID string) {
	t.Helper()
	list, err := f.st.OutboxListByAgreement(context.Background(), mustUUID(t, agreementID))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list {
		got, err := f.st.OutboxGet(context.Background(), m.ID)
		if err != nil || got.SealedBody != nil {
			t.Fatalf("message %s (%s): sealed body %d bytes, %v", m.ID, got.State, len(got.SealedBody), err)
		}
	}
}

func TestDeliverTemporaryThenSuccess(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.agreement(t, 1)
	f.sink.FailNext(mailsink.Temporary)
	f.run(t, f.worker(t))
	d := f.waitFor(t, c.AgreementID)
	if d[0].State != "sent" || d[0].Attempts != 2 {
		t.Fatalf("after the retry: %+v", d[0])
	}
	if n := len(f.sink.Messages()); n != 1 {
		t.Fatalf("sink accepted %d messages, want 1", n)
	}
	rows, err := f.st.OutboxAttemptListByAgreement(context.Background(), mustUUID(t, c.AgreementID))
	if err != nil || len(rows) != 2 || rows[0].OK || !strings.Contains(rows[0].Reply, "451") || !rows[1].OK {
		t.Fatalf("attempts %+v, %v", rows, err)
	}
}

// TestRetryingIsShownWhileDue: a temporary failure is recorded as
// retrying, with the reply, until the next attempt.
func TestRetryingIsShownWhileDue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.agreement(t, 1)
	f.sink.FailNext(mailsink.Temporary)
	w := f.worker(t)
	id := f.queued(t, c.AgreementID)[0].ID
	if err := w.Deliver(context.Background(), id); err == nil {
		t.Fatal("a 451 asked for no retry")
	}
	d := f.deliveries(t, c.AgreementID)
	if d[0].State != "retrying" || d[0].Attempts != 1 || d[0].LastReply == nil || !strings.Contains(*d[0].LastReply, "451") {
		t.Fatalf("after a 451: %+v", d[0])
	}
}

func TestDeliverPermanentFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.agreement(t, 1)
	f.sink.FailNext(mailsink.Permanent)
	f.run(t, f.worker(t))
	d := f.waitFor(t, c.AgreementID)
	if d[0].State != "failed" || d[0].Attempts != 1 || d[0].LastReply == nil || !strings.Contains(*d[0].LastReply, "550") {
		t.Fatalf("after a 550: %+v", d[0])
	}
	if n := len(f.sink.Messages()); n != 0 {
		t.Fatalf("sink accepted %d messages", n)
	}
	if n := f.sink.Attempts(); n != 1 {
		t.Fatalf("%d DATA attempts, want 1 (no retry after 5xx)", n)
	}
	f.bodiesErased(t, c.AgreementID)
}

func TestDeliverConnectionDroppedMidDataIsRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.agreement(t, 1)
	f.sink.DropNext(1)
	f.run(t, f.worker(t))
	if d := f.waitFor(t, c.AgreementID); d[0].State != "sent" || d[0].Attempts != 2 {
		t.Fatalf("after the retry: %+v", d[0])
	}
	if n := len(f.sink.Messages()); n != 1 {
		t.Fatalf("sink accepted %d messages, want 1", n)
	}
}

// TestRerunAfterSuccessSendsNothing: River runs a job at least once; a
// run after the email was recorded sent sends nothing.
func TestRerunAfterSuccessSendsNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.agreement(t, 1)
	w := f.worker(t)
	id := f.queued(t, c.AgreementID)[0].ID
	for range 3 {
		if err := w.Deliver(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.sink.Messages()); n != 1 {
		t.Fatalf("sink accepted %d messages, want 1", n)
	}
}

// TestSerializationRetryDuringRecordSendsOnce: the transaction that
// records a sent email loses a deadlock on the email's row (another
// transaction updates the row, then waits for the attempt row the record
// wrote) and is run again by store.InTx. The email was sent once, before
// the transaction, and is not sent again.
func TestSerializationRetryDuringRecordSendsOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.agreement(t, 1)
	id := f.queued(t, c.AgreementID)[0].ID
	w := f.worker(t)
	var tries atomic.Int32
	other, err := pgx.Connect(context.Background(), pgtest.ServiceURL(f.url))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close(context.Background()) })
	otherDone := make(chan error, 1)
	w.RecordHook = func(ctx context.Context) {
		if tries.Add(1) != 1 {
			return
		}
		// Another transaction holds the email's row...
		tx, err := other.Begin(ctx)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := tx.Exec(ctx, `UPDATE outbox SET last_reply = 'held by another transaction' WHERE id = $1`, id); err != nil {
			t.Error(err)
			return
		}
		go func() {
			// ...and, once the record waits for that row, wants the
			// attempt row the record wrote: a deadlock, which the
			// record's transaction (waiting first) loses.
			time.Sleep(300 * time.Millisecond)
			_, err := tx.Exec(context.Background(), `INSERT INTO outbox_attempts (outbox_id, attempt, attempted_at, ok, reply, workspace_id) SELECT id, 1, now(), false, 'x', workspace_id FROM outbox WHERE id = $1`, id)
			_ = tx.Rollback(context.Background())
			otherDone <- err
		}()
	}
	if err := w.Deliver(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if err := <-otherDone; err != nil {
		t.Fatalf("the other transaction: %v", err)
	}
	if n := tries.Load(); n < 2 {
		t.Fatalf("the record ran %d times: no conflict was forced", n)
	}
	if n := len(f.sink.Messages()); n != 1 {
		t.Fatalf("sink accepted %d messages, want exactly 1", n)
	}
	d := f.deliveries(t, c.AgreementID)
	if d[0].State != "sent" || d[0].Attempts != 1 {
		t.Fatalf("delivery %+v", d[0])
	}
	if n := f.attempts(t, c.AgreementID); n != 1 {
		t.Fatalf("%d attempts recorded, want 1", n)
	}
}

// TestManyReplicasDeliverEachMessageOnce: four River clients, as four
// replicas, share one queue; each email arrives once.
func TestManyReplicasDeliverEachMessageOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.agreement(t, 20)
	f.sink.SetDelay(20 * time.Millisecond)
	for range 4 {
		f.run(t, f.worker(t))
	}
	f.waitFor(t, c.AgreementID)
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
		if d.State != "sent" || d.Attempts != 1 {
			t.Errorf("delivery %+v", d)
		}
	}
}

// TestNothingQueuedWithoutCommit: an email's job is written in the
// transaction of the change that causes it: a rolled-back change queues
// nothing.
func TestNothingQueuedWithoutCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.agreement(t, 1)
	jobsOf := func() int {
		var n int
		if err := f.st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'email'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := jobsOf(); n != 1 {
		t.Fatalf("%d email jobs after one invitation, want 1", n)
	}
	inv := f.queued(t, c.AgreementID)[0]
	rollback := errors.New("roll back")
	err := f.st.InTx(context.Background(), func(tx *store.Tx) error {
		m := store.OutboxMessage{ID: uuid.New(), InvitationID: inv.InvitationID, AgreementID: mustUUID(t, c.AgreementID),
			Recipient: "x@example.test", Subject: "s", MessageID: uuid.NewString() + "@test", SealedBody: []byte{1}, CreatedAt: time.Now()}
		if err := tx.OutboxInsert(context.Background(), m); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	if n := jobsOf(); n != 1 {
		t.Fatalf("%d email jobs after a rolled-back insert, want 1", n)
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
