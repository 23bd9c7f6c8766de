package reply_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/record"
	"github.com/consensus-md/consensus/internal/reply"
)

// TestHandle runs each kind of reply through the reader against a real
// database and a real DNS server publishing the DKIM keys.
func TestHandle(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	digest := f.created.RevisionDigest
	short := digest[:12]
	good := func(id, body string) []byte {
		return signWith(t, f.message("alice@example.test", id, "", "text/plain; charset=utf-8", "7bit", body), "example.test", "s1", f.rsaKey)
	}
	cases := []struct {
		name string
		raw  []byte
		want string
	}{
		{"forged From without DKIM", f.message("alice@example.test", "forged", "", "text/plain", "7bit", "AGREE "+short+"\n"), "ignored: reply: not signed"},
		{"DKIM of another domain", signWith(t, f.message("alice@example.test", "other", "", "text/plain", "7bit", "AGREE "+short+"\n"), "elsewhere.test", "s1", f.other), "ignored: reply: not signed"},
		{"valid signature over a modified body", bytes.Replace(good("modified", "a comment\n"), []byte("a comment"), []byte("AGREE "+short), 1), "ignored: reply: not signed"},
		{"another From", signWith(t, f.message("mallory@example.test", "mallory", "", "text/plain", "7bit", "AGREE "+short+"\n"), "example.test", "s1", f.rsaKey), "ignored: reply: not signed"},
		{"auto-reply", signWith(t, f.message("alice@example.test", "auto", "Auto-Submitted: auto-replied\r\n", "text/plain", "7bit", "I am away\n"), "example.test", "s1", f.rsaKey), "ignored: Auto-Submitted"},
		{"bulk", signWith(t, f.message("alice@example.test", "bulk", "Precedence: bulk\r\n", "text/plain", "7bit", "news\n"), "example.test", "s1", f.rsaKey), "ignored: Precedence"},
		{"top-posted with quoted AGREE below", good("top", "I need more time.\n\nOn Fri, 4 Dec 2026, Consensus wrote:\n> AGREE "+short+"\n"), "recorded comment"},
		{"HTML only", signWith(t, f.message("alice@example.test", "html", "", "text/html; charset=utf-8", "7bit", "<p>Looks <b>fine</b> to me</p><blockquote>AGREE "+short+"</blockquote>"), "example.test", "s1", f.rsaKey), "recorded comment"},
		{"quoted-printable ISO-8859-1", signWith(t, f.message("alice@example.test", "latin", "", "text/plain; charset=iso-8859-1", "quoted-printable", "Tr=E8s bien, merci\n"), "example.test", "s1", f.rsaKey), "recorded comment"},
		{"base64", signWith(t, f.message("alice@example.test", "b64", "", "text/plain; charset=utf-8", "base64", base64.StdEncoding.EncodeToString([]byte("One more comment\n"))), "example.test", "s1", f.rsaKey), "recorded comment"},
		{"old digest", good("olddigest", "DISAGREE 000000000000\n"), "refused: your reply names no revision"},
		{"agree", good("agree", "AGREE "+short+"\n\nOn Fri, Consensus wrote:\n> hello\n"), "recorded agree"},
		{"replay of the same Message-ID", good("agree", "AGREE "+short+"\n"), "ignored: seen before"},
		{"a second decision", good("again", "DISAGREE "+digest+"\n"), "refused: you have already decided"},
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
	// The stored events carry the evidence, and the record verifies.
	evidence := f.evidenceOf(t)
	for i, e := range evidence {
		if err := e.Check(); err != nil {
			t.Errorf("evidence %d: %v", i, err)
		}
	}
	if len(evidence) != 5 {
		t.Errorf("%d events carry evidence, want 5 (4 comments and a decision)", len(evidence))
	}

	// An oversize message is not read, so not authenticated: unanswered.
	big := f.message("alice@example.test", "big", "", "text/plain", "7bit", strings.Repeat("x", 2<<20))
	if got, _ := f.reader.Handle(ctx, big, true); !strings.HasPrefix(got, "ignored: larger than") {
		t.Errorf("2 MiB: got %q", got)
	}
	// After the deadline, nothing records.
	f.mu.Lock()
	f.now = f.now.Add(2 * time.Hour)
	f.mu.Unlock()
	f.inv = mustInvitation(t, f, 1)
	late := signWith(t, f.message("bob@example.test", "late", "", "text/plain", "7bit", "AGREE "+short+"\n"), "example.test", "s1", f.rsaKey)
	if got, _ := f.reader.Handle(ctx, late, false); !strings.HasPrefix(got, "refused: the deadline has passed") {
		t.Errorf("after the deadline: got %q", got)
	}
	answers := f.answers(t)
	if answers != 8 {
		t.Errorf("%d answers queued, want 8 (5 recorded, 3 refused: one per reply acted on)", answers)
	}
	_ = reply.MaxMessage
}

func mustInvitation(t *testing.T, f *fixture, i int) uuid.UUID {
	t.Helper()
	return uuid.MustParse(f.created.Participants[i].InvitationID)
}

// evidenceOf reads the stored evidence of the agreement's events.
func (f *fixture) evidenceOf(t *testing.T) []record.Evidence {
	t.Helper()
	events, err := f.v.Store.EventListByAgreement(context.Background(), uuid.MustParse(f.created.AgreementID))
	if err != nil {
		t.Fatal(err)
	}
	var out []record.Evidence
	for _, e := range events {
		if e.Evidence == "" {
			continue
		}
		var ev record.Evidence
		if err := json.Unmarshal([]byte(e.Evidence), &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// answers counts the answer emails queued.
func (f *fixture) answers(t *testing.T) int {
	t.Helper()
	msgs, err := f.v.Store.OutboxListByAgreement(context.Background(), uuid.MustParse(f.created.AgreementID))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range msgs {
		if m.Kind == "answer" {
			n++
		}
	}
	return n
}
