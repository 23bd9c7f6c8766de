package outbox_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/mailsink"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/venue"
	"github.com/consensus-md/consensus/internal/workspace"
)

// room is an agreement of the fixture with every participant claimed.
type noticeRoom struct {
	c      *venue.Created
	creds  []venue.ParticipantCredential
	digest string
}

// noticeRoom creates an agreement whose deadline is in before, of the
// participants named by kinds ("r": required, "o": optional), with the
// reminders given (nil: the default), and claims every slot.
func (f *fixture) noticeRoom(t *testing.T, before time.Duration, reminders []string, kinds ...string) *noticeRoom {
	t.Helper()
	ctx := context.Background()
	in := venue.CreateInput{Title: "Notify test", Objective: "Hear the outcome.", Reminders: reminders,
		Deadline: time.Now().Add(before).UTC().Format(time.RFC3339)}
	for i, k := range kinds {
		req := k == "r"
		in.Participants = append(in.Participants, venue.ParticipantInput{DisplayName: fmt.Sprintf("Agent %d", i), Kind: "agent",
			Email: fmt.Sprintf("agent%d@example.test", i), Required: &req})
	}
	c, err := f.venue.CreateAgreement(ctx, venue.OperatorCall{Principal: workspace.Bootstrap()}, in)
	if err != nil {
		t.Fatal(err)
	}
	r := &noticeRoom{c: c, digest: c.RevisionDigest}
	for _, p := range c.Participants {
		token := "csp_test-" + uuid.NewString()
		ok, err := f.st.ParticipantClaim(ctx, uuid.MustParse(p.ParticipantID), store.Claim{BindingJSON: "{}", BindingDigest: token,
			TokenHash: secret.Hash(token), ClaimedAt: time.Now()})
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		r.creds = append(r.creds, venue.NewParticipantCredential(room.KindAgent, p.InvitationID, token))
	}
	return r
}

// decide posts action as participant i.
func (f *fixture) decide(t *testing.T, r *noticeRoom, i int, action string) {
	t.Helper()
	body, rev := "", 1
	if _, _, err := f.venue.PostEventAs(context.Background(), r.creds[i], uuid.NewString(), nil,
		venue.EventInput{Action: &action, Body: &body, Revision: &rev, Digest: &r.digest}); err != nil {
		t.Fatal(err)
	}
}

// kind lists the agreement's messages of one kind.
func (f *fixture) kind(t *testing.T, agreementID, kind string) []store.OutboxMessage {
	t.Helper()
	list, err := f.st.OutboxListByAgreement(context.Background(), mustUUID(t, agreementID))
	if err != nil {
		t.Fatal(err)
	}
	var out []store.OutboxMessage
	for _, m := range list {
		if m.Kind == kind {
			m, err = f.st.OutboxGet(context.Background(), m.ID)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
	}
	return out
}

// TestOutcomeEmailOncePerParticipant: the append that decides queues one
// outcome email for each participant not revoked, in its transaction; the
// later paths that could settle it again queue none; the email threads
// under the invitation, states who decided what, and attaches CONSENSUS.md
// byte for byte. A comment, which decides nothing, queues no email.
func TestOutcomeEmailOncePerParticipant(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	r := f.noticeRoom(t, 48*time.Hour, nil, "r", "r", "o", "o")
	revoked := r.c.Participants[3]
	if _, err := f.venue.RevokeParticipant(ctx, venue.OperatorCall{Principal: workspace.Bootstrap()}, revoked.ParticipantID); err != nil {
		t.Fatal(err)
	}
	comment, body, rev := "comment", "looks fine", 1
	if _, _, err := f.venue.PostEventAs(ctx, r.creds[0], "comment-1", nil, venue.EventInput{Action: &comment, Body: &body, Revision: &rev, Digest: &r.digest}); err != nil {
		t.Fatal(err)
	}
	f.decide(t, r, 0, "agree")
	if got := f.kind(t, r.c.AgreementID, store.OutboxOutcome); len(got) != 0 {
		t.Fatalf("%d outcome emails while pending", len(got))
	}
	f.decide(t, r, 1, "agree")
	outcomes := f.kind(t, r.c.AgreementID, store.OutboxOutcome)
	if len(outcomes) != 3 {
		t.Fatalf("%d outcome emails, want 3 (the revoked participant gets none)", len(outcomes))
	}
	// Every other path that settles an outcome finds it final and queues
	// nothing more.
	id := mustUUID(t, r.c.AgreementID)
	if set, err := f.st.AgreementSetOutcome(ctx, id, room.Outcome{Status: room.StatusExpired, DecidedAt: time.Now()}); err != nil || set {
		t.Fatal(set, err)
	}
	if _, err := f.st.AgreementExpireDue(ctx, time.Now().Add(72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := f.kind(t, r.c.AgreementID, store.OutboxOutcome); len(got) != 3 {
		t.Fatalf("%d outcome emails after the other paths, want 3", len(got))
	}
	art, err := f.st.ArtifactGet(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	invitations := map[uuid.UUID]string{}
	for _, m := range f.kind(t, r.c.AgreementID, store.OutboxInvitation) {
		invitations[m.InvitationID] = m.MessageID
	}
	w := f.worker(t)
	w.Origin = "https://consensus.test"
	for _, m := range outcomes {
		if m.ParticipantID.String() == revoked.ParticipantID {
			t.Fatal("the revoked participant has an outcome email")
		}
		if len(m.References) != 1 || m.References[0] != invitations[m.InvitationID] {
			t.Fatalf("outcome references %v, want the invitation's %q", m.References, invitations[m.InvitationID])
		}
		if !strings.HasPrefix(m.Subject, "CONSENSUS.md: outcome reached: Notify test") {
			t.Fatalf("subject %q", m.Subject)
		}
		// Run twice, as a retried job would: it is sent once.
		for range 2 {
			if err := w.Deliver(ctx, m.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	msgs := f.sink.Messages()
	var outcomeMsgs int
	for _, msg := range msgs {
		if !bytes.Contains(msg.Data, []byte("Consensus outcome notice v1")) {
			continue
		}
		outcomeMsgs++
		text, attached, inReplyTo := readNotice(t, msg.Data)
		if sum := sha256.Sum256(attached); hex.EncodeToString(sum[:]) != art.SHA256 || !bytes.Equal(attached, art.Body) {
			t.Fatalf("attached CONSENSUS.md differs from the artifact (%d bytes, want %d)", len(attached), len(art.Body))
		}
		for _, want := range []string{"Outcome: reached", "CONSENSUS.md is attached. Its SHA-256: " + art.SHA256,
			"- Agent 0 (agent, required): agree (revision 1)", "- Agent 2 (agent, optional): no decision", "- Agent 3 (agent, optional): no decision; revoked",
			"/record", "This email carries no secret."} {
			if !strings.Contains(text, want) {
				t.Fatalf("outcome email lacks %q:\n%s", want, text)
			}
		}
		if inReplyTo == "" {
			t.Fatal("outcome email without In-Reply-To")
		}
	}
	if outcomeMsgs != 3 {
		t.Fatalf("%d outcome emails sent, want 3", outcomeMsgs)
	}
}

// TestOutcomeEmailWithoutArtifact: an outcome other than reached, here an
// expiry by the sweep, tells every participant without an attachment.
func TestOutcomeEmailWithoutArtifact(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	r := f.noticeRoom(t, time.Hour, []string{}, "r", "r")
	f.decide(t, r, 0, "agree")
	if _, err := f.st.AgreementExpireDue(ctx, time.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	outcomes := f.kind(t, r.c.AgreementID, store.OutboxOutcome)
	if len(outcomes) != 2 {
		t.Fatalf("%d outcome emails, want 2", len(outcomes))
	}
	w := f.worker(t)
	for _, m := range outcomes {
		if err := w.Deliver(ctx, m.ID); err != nil {
			t.Fatal(err)
		}
	}
	msgs := f.sink.Messages()
	if len(msgs) != 2 {
		t.Fatalf("%d outcome emails sent, want 2", len(msgs))
	}
	for _, msg := range msgs {
		text, attached, _ := readNotice(t, msg.Data)
		if attached != nil || !strings.Contains(text, "Outcome: expired") || !strings.Contains(text, "No CONSENSUS.md was issued") {
			t.Fatalf("expired outcome email (%d attached bytes):\n%s", len(attached), text)
		}
	}
}

// TestRemindersDueOncePerTime: the sweep queues, for each required
// participant who has not decided, one reminder per reminder time, however
// many replicas run it at once; only the latest time that passed; none
// for a participant who decided, an optional one, a revoked one, an
// agreement without reminders or one whose outcome is final. A reminder
// queued before its participant decided is dropped, never sent.
func TestRemindersDueOncePerTime(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	start := time.Now()
	r := f.noticeRoom(t, 48*time.Hour, nil, "r", "r", "r", "o")
	none := f.noticeRoom(t, 48*time.Hour, []string{}, "r")
	deadline := start.Add(48 * time.Hour).Truncate(time.Second)
	f.decide(t, r, 0, "agree")
	if _, err := f.venue.RevokeParticipant(ctx, venue.OperatorCall{Principal: workspace.Bootstrap()}, r.c.Participants[2].ParticipantID); err != nil {
		t.Fatal(err)
	}
	sweep := func(at time.Time) int {
		t.Helper()
		var mu sync.Mutex
		var wg sync.WaitGroup
		total := 0
		for range 4 { // four replicas at once
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := f.st.OutboxQueueReminders(ctx, at)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				total += n
				mu.Unlock()
			}()
		}
		wg.Wait()
		return total
	}
	if n := sweep(deadline.Add(-25 * time.Hour)); n != 0 {
		t.Fatalf("%d reminders before the first reminder time", n)
	}
	if n := sweep(deadline.Add(-24*time.Hour + time.Second)); n != 1 {
		t.Fatalf("%d reminders at 24 h, want 1 (Agent 1 only)", n)
	}
	if n := sweep(deadline.Add(-2 * time.Hour)); n != 0 {
		t.Fatalf("%d reminders again before the next time", n)
	}
	got := f.kind(t, r.c.AgreementID, store.OutboxReminder)
	if len(got) != 1 || got[0].ParticipantID.String() != r.c.Participants[1].ParticipantID || !got[0].RemindAt.Equal(deadline.Add(-24*time.Hour)) {
		t.Fatalf("reminders %+v", got)
	}
	if len(got[0].References) != 1 || !strings.HasSuffix(got[0].References[0], "@consensus.test") {
		t.Fatalf("reminder references %v", got[0].References)
	}
	if l := f.kind(t, none.c.AgreementID, store.OutboxReminder); len(l) != 0 {
		t.Fatalf("%d reminders in an agreement without reminders", len(l))
	}
	w := f.worker(t)
	w.Origin = "https://consensus.test"
	w.Now = func() time.Time { return deadline.Add(-24 * time.Hour) }
	if err := w.Deliver(ctx, got[0].ID); err != nil {
		t.Fatal(err)
	}
	msgs := f.sink.Messages()
	if len(msgs) != 1 || msgs[0].To != "agent1@example.test" {
		t.Fatalf("sent %+v", msgs)
	}
	text, _, inReplyTo := readNotice(t, msgs[0].Data)
	if !strings.Contains(text, "Consensus reminder v1") || !strings.Contains(text, "The deadline is in about 24 hours.") || inReplyTo != got[0].References[0] {
		t.Fatalf("reminder (In-Reply-To %q):\n%s", inReplyTo, text)
	}

	// A sweep that ran late sends the latest time only; the reminder queued
	// before its participant decided is then dropped, never sent.
	if n := sweep(deadline.Add(-30 * time.Minute)); n != 1 {
		t.Fatalf("%d reminders at 1 h, want 1", n)
	}
	f.decide(t, r, 1, "agree")
	var second store.OutboxMessage
	for _, m := range f.kind(t, r.c.AgreementID, store.OutboxReminder) {
		if m.RemindAt.Equal(deadline.Add(-time.Hour)) {
			second = m
		}
	}
	if err := w.Deliver(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	if m, err := f.st.OutboxGet(ctx, second.ID); err != nil || m.State != store.OutboxFailed || m.LastReply == nil || *m.LastReply != "not sent: the participant decided" {
		t.Fatalf("reminder after a decision: %+v, %v", m, err)
	}
	if len(f.sink.Messages()) != 1 {
		t.Fatal("a reminder went out after the decision")
	}
	if n := sweep(deadline.Add(-time.Minute)); n != 0 {
		t.Fatalf("%d reminders after every required participant decided", n)
	}
}

// TestReminderSkipsTimesBeforeTheInvitation: an agreement created ten
// hours before its deadline has no 24-hour reminder, only the 1-hour one.
func TestReminderSkipsTimesBeforeTheInvitation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.noticeRoom(t, 10*time.Hour, []string{"PT24H", "PT1H"}, "r")
	deadline := time.Now().Add(10 * time.Hour)
	for at, want := range map[time.Duration]int{-9 * time.Hour: 0, -59 * time.Minute: 1} {
		if n, err := f.st.OutboxQueueReminders(context.Background(), deadline.Add(at)); err != nil || n != want {
			t.Fatalf("at %v before the deadline: %d reminders, %v; want %d", -at, n, err, want)
		}
	}
	if l := f.kind(t, r.c.AgreementID, store.OutboxReminder); len(l) != 1 {
		t.Fatalf("%d reminders", len(l))
	}
}

// readNotice returns the text part of a sent message, its attachment
// (nil without one) and its In-Reply-To.
func readNotice(t *testing.T, raw []byte) (text string, attached []byte, inReplyTo string) {
	t.Helper()
	h, parts, err := mailsink.Parts(raw)
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := h.MsgIDList("In-Reply-To"); err == nil && len(ids) == 1 {
		inReplyTo = ids[0]
	}
	for _, p := range parts {
		if !p.Attachment {
			text = string(p.Body)
			continue
		}
		if p.Filename != "CONSENSUS.md" || p.MediaType != "text/markdown" {
			t.Fatalf("attachment %q of type %q", p.Filename, p.MediaType)
		}
		attached = p.Body
	}
	return text, attached, inReplyTo
}
