package reply_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/reply/replytest"
)

// TestReplayedReplyIsIgnored: a copy of a signed reply that differs only
// in what its DKIM signature does not cover (a new Message-ID when h=
// leaves it out, an added field when the message has no Message-ID) is the
// same reply: it records nothing and gets no answer. So is the same body
// signed again by the invitee's domain under a new Message-ID.
func TestReplayedReplyIsIgnored(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	unsignedID := func(id, body string) []byte {
		return replytest.SignHeaders(t, f.message("alice@example.test", id, "", "text/plain", "7bit", body), "example.test", "s1", f.rsaKey,
			"From", "To", "Subject", "Date")
	}
	first := unsignedID("first", "A first comment\n")
	withoutID := withoutField(unsignedID("gone", "A second comment\n"), "Message-ID")
	resigned := replytest.SignHeaders(t, f.message("alice@example.test", "resent", "X-Mailer: resend\r\n", "text/plain", "7bit", "A first comment\n"),
		"example.test", "s1", f.rsaKey, "From", "To", "Subject", "Date", "Message-ID", "X-Mailer")
	cases := []struct {
		name string
		raw  []byte
		want string
	}{
		{"a reply whose signature leaves out Message-ID", first, "recorded comment"},
		{"its copy under a new Message-ID", []byte(strings.Replace(string(first), "<first@example.test>", "<replayed@example.test>", 1)), "ignored"},
		{"a reply without Message-ID", withoutID, "recorded comment"},
		{"its copy with a field added", append([]byte("X-Replayed: yes\r\n"), withoutID...), "ignored"},
		{"the first body signed again under a new Message-ID", resigned, "ignored"},
	}
	for _, c := range cases {
		got, err := f.reader.Handle(ctx, c.raw, false)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: got %q, want %q…", c.name, got, c.want)
		}
	}
	if n := len(f.evidenceOf(t)); n != 2 {
		t.Errorf("%d events carry evidence, want 2 (the two comments)", n)
	}
	if n := f.answers(t); n != 2 {
		t.Errorf("%d answers, want 2 (one per reply recorded)", n)
	}
}

// TestUnauthenticatedMessageGetsNoAnswer: a message too large to read is
// not authenticated, so nothing answers it, however often it comes under
// a new Message-ID; nor does an unsigned one of any size.
func TestUnauthenticatedMessageGetsNoAnswer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	for _, id := range []string{"big-1", "big-2"} {
		big := f.message("alice@example.test", id, "", "text/plain", "7bit", strings.Repeat("x", 2<<20))
		if got, err := f.reader.Handle(ctx, big, true); err != nil || !strings.HasPrefix(got, "ignored") {
			t.Errorf("unsigned, 2 MiB, %s: %q, %v", id, got, err)
		}
	}
	small := f.message("alice@example.test", "small", "", "text/plain", "7bit", "AGREE "+f.created.RevisionDigest[:12]+"\n")
	if got, err := f.reader.Handle(ctx, small, false); err != nil || !strings.HasPrefix(got, "ignored") {
		t.Errorf("unsigned: %q, %v", got, err)
	}
	if n := f.answers(t); n != 0 {
		t.Errorf("%d answers to unauthenticated messages, want 0", n)
	}
}

// TestRefusedReplyLeavesNoClaim: Bob disagrees by reply, which settles the
// outcome; Alice, who never claimed her place, then agrees by reply. Her
// reply is refused (the room is closed) and answered, and her place stays
// unclaimed: nothing of a refused reply but its refusal is committed.
func TestRefusedReplyLeavesNoClaim(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	short := f.created.RevisionDigest[:12]
	f.inv = mustInvitation(t, f, 1)
	bob := signWith(t, f.message("bob@example.test", "bob-no", "", "text/plain", "7bit", "DISAGREE "+short+"\nNot now.\n"), "example.test", "s1", f.rsaKey)
	if got, err := f.reader.Handle(ctx, bob, false); err != nil || got != "recorded disagree" {
		t.Fatalf("Bob's disagreement: %q, %v", got, err)
	}
	f.inv = mustInvitation(t, f, 0)
	alice := signWith(t, f.message("alice@example.test", "alice-yes", "", "text/plain", "7bit", "AGREE "+short+"\n"), "example.test", "s1", f.rsaKey)
	if got, err := f.reader.Handle(ctx, alice, false); err != nil || !strings.HasPrefix(got, "refused: the outcome is final") {
		t.Fatalf("Alice's agreement after the outcome: %q, %v", got, err)
	}
	p, err := f.v.Store.ParticipantGet(ctx, uuid.MustParse(f.created.Participants[0].ParticipantID))
	if err != nil {
		t.Fatal(err)
	}
	if p.State != "invited" || p.BindingDigest != "" || p.TokenHash != nil {
		t.Errorf("Alice's place after a refused reply: state %q, binding %q: the claim was committed", p.State, p.BindingDigest)
	}
	if n := f.answers(t); n != 2 {
		t.Errorf("%d answers, want 2 (Bob's recorded, Alice's refused)", n)
	}
}

// withoutField removes every field called name from the header of raw.
func withoutField(raw []byte, name string) []byte {
	head, body, _ := strings.Cut(string(raw), "\r\n\r\n")
	var kept []string
	for _, l := range strings.Split(head, "\r\n") {
		if !strings.HasPrefix(strings.ToLower(l), strings.ToLower(name)+":") {
			kept = append(kept, l)
		}
	}
	return []byte(strings.Join(kept, "\r\n") + "\r\n\r\n" + body)
}
