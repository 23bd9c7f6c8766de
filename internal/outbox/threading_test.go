package outbox_test

import (
	"context"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/venue"
	"github.com/consensus-md/consensus/internal/workspace"
)

// TestEveryEmailOfAnInvitationThreads: the revision notice and a resent
// invitation thread under the invitation's first email, which itself
// starts the thread; the headers go out as stored. After the amendment
// moved the deadline, the reminders begin from the new one.
func TestEveryEmailOfAnInvitationThreads(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	op := venue.OperatorCall{Principal: workspace.Bootstrap()}
	c := f.agreement(t, 2)
	first := f.kind(t, c.AgreementID, store.OutboxInvitation)
	if len(first) != 2 || len(first[0].References) != 0 {
		t.Fatalf("first invitations %+v", first)
	}
	root := map[uuid.UUID]string{}
	for _, m := range first {
		root[m.InvitationID] = m.MessageID
	}
	deadline := time.Now().Add(72 * time.Hour).UTC().Truncate(time.Second)
	later := deadline.Format(time.RFC3339)
	if _, err := f.venue.AmendAgreement(ctx, op, c.AgreementID, venue.AmendInput{Deadline: &later}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.venue.ResendInvitation(ctx, op, c.Participants[0].InvitationID); err != nil {
		t.Fatal(err)
	}
	notices := f.kind(t, c.AgreementID, store.OutboxRevision)
	invitations := f.kind(t, c.AgreementID, store.OutboxInvitation)
	if len(notices) != 2 || len(invitations) != 3 {
		t.Fatalf("%d notices, %d invitations", len(notices), len(invitations))
	}
	for _, m := range append(notices, invitations...) {
		want := root[m.InvitationID]
		if m.MessageID == want {
			continue // the thread's first email
		}
		if len(m.References) != 1 || m.References[0] != want {
			t.Fatalf("%s to %s: references %v, want [%s]", m.Kind, m.Recipient, m.References, want)
		}
	}
	w := f.worker(t)
	for _, m := range notices {
		if err := w.Deliver(ctx, m.ID); err != nil {
			t.Fatal(err)
		}
	}
	sent := f.sink.Messages()
	if len(sent) != len(notices) {
		t.Fatalf("%d emails sent, want the %d notices", len(sent), len(notices))
	}
	for _, msg := range sent {
		h, err := mail.ReadMessage(strings.NewReader(string(msg.Data)))
		if err != nil {
			t.Fatal(err)
		}
		if irt := h.Header.Get("In-Reply-To"); irt == "" || irt != h.Header.Get("References") || !strings.HasSuffix(irt, "@consensus.test>") {
			t.Fatalf("revision notice In-Reply-To %q, References %q", irt, h.Header.Get("References"))
		}
	}
	// The reminders follow the deadline the amendment set.
	for at, want := range map[time.Duration]int{-25 * time.Hour: 0, -23 * time.Hour: 2} {
		if n, err := f.st.OutboxQueueReminders(ctx, deadline.Add(at)); err != nil || n != want {
			t.Fatalf("%v before the amended deadline: %d reminders, %v; want %d", -at, n, err, want)
		}
	}
}
