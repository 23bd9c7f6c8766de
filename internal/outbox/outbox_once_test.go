package outbox_test

// Each email is sent once: a rerun, a serialization retry and many replicas
// send it once, and nothing is queued without a commit.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/store"
)

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
