package outbox_test

// A delivery's outcomes: sent (and its body erased), retried after a
// temporary reply or a dropped connection, failed after a permanent one.

import (
	"context"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/mailsink"
)

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
