package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gomail "github.com/emersion/go-message/mail"
)

// TestNotifyRemindersThenOutcomeByEmail: the loop closes by email, as a
// participant's mailbox (the daemon's Maildir) shows it. Under a test
// clock, each required participant who has not decided gets a reminder at
// each configured time and none after deciding; once the outcome is
// reached every participant gets exactly one outcome email with
// CONSENSUS.md attached, whose SHA-256 is the artifact's; an agreement
// with "reminders": [] reminds nobody, and its expiry by the deadline
// sweep is told to its participant without an attachment. Every one of
// these emails threads under its invitation's email.
func TestNotifyRemindersThenOutcomeByEmail(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	deadline := s.future()
	create := func(title string, reminders []string, names ...string) (ids, emails []string, body map[string]any) {
		t.Helper()
		var parts []map[string]any
		for _, n := range names {
			parts = append(parts, map[string]any{"displayName": n, "kind": "agent", "email": strings.ToLower(n) + "@agents.example", "required": n != "Carol"})
		}
		r := s.do("POST", "/api/v1/admin/agreements", operator(), map[string]any{"title": title, "objective": "Close the loop.", "rules": []string{},
			"deadline": deadline.Format(time.RFC3339), "participants": parts, "reminders": reminders})
		expect(t, r, 201, "")
		body = r.json(t)
		for _, p := range body["participants"].([]any) {
			ids = append(ids, p.(map[string]any)["invitationId"].(string))
			emails = append(emails, p.(map[string]any)["email"].(string))
		}
		return ids, emails, body
	}
	invs, emails, created := create("Ship the notify loop", []string{"PT1H", "PT24H"}, "Alice", "Bob", "Carol", "Dave")
	if got := created["reminders"]; !slices.Equal(toStrings(got), []string{"PT24H", "PT1H"}) {
		t.Fatalf("reminders as stored: %v", got)
	}
	_, quietEmails, quiet := create("A quiet one", []string{}, "Erin")
	if got := toStrings(quiet["reminders"]); len(got) != 0 {
		t.Fatalf("reminders [] stored as %v", got)
	}
	alice, bob, dave := s.agent(invs[0]).join(), s.agent(invs[1]).join(), s.agent(invs[3]).join()
	inviteIDs := map[string]string{} // recipient → the Message-ID of its invitation email
	for _, m := range s.mailbox() {
		if strings.HasPrefix(m.subject, "CONSENSUS.md: invitation: ") {
			inviteIDs[m.to] = m.messageID
		}
	}
	expect(t, bob.post("bob-agrees-1", "agree", ""), 201, "")

	// 24 hours before the deadline: Alice and Dave, required and
	// undecided, are reminded; Bob (decided), Carol (optional) and Erin
	// (no reminders) are not.
	s.Clock.Advance(deadline.Sub(s.Clock.Now()) - 24*time.Hour + time.Minute)
	reminders := s.waitForMail(t, "CONSENSUS.md: reminder: ", 2)
	for _, m := range reminders {
		if m.to != emails[0] && m.to != emails[3] {
			t.Fatalf("a reminder to %s", m.to)
		}
		if !strings.Contains(m.text, "The deadline is in about 24 hours.") {
			t.Fatalf("first reminder:\n%s", m.text)
		}
	}
	expect(t, alice.post("alice-agrees-1", "agree", ""), 201, "")

	// 1 hour before: Dave only. Alice decided.
	s.Clock.Advance(23 * time.Hour)
	reminders = s.waitForMail(t, "CONSENSUS.md: reminder: ", 3)
	second := slices.IndexFunc(reminders, func(m received) bool { return strings.Contains(m.text, "The deadline is in about 59 minutes.") })
	if second < 0 || reminders[second].to != emails[3] {
		t.Fatalf("no second reminder to Dave: %+v", reminders)
	}
	expect(t, dave.post("dave-agrees-1", "agree", ""), 201, "")

	// Reached: one outcome email to each of the four, CONSENSUS.md attached.
	art := bob.artifact("GET")
	expect(t, art, 200, "")
	sum := sha256.Sum256(art.body)
	outcomes := s.waitForMail(t, "CONSENSUS.md: outcome reached: Ship the notify loop", 4)
	for _, m := range outcomes {
		if got := sha256.Sum256(m.attached); got != sum {
			t.Fatalf("the CONSENSUS.md attached for %s is not the artifact (%d bytes)", m.to, len(m.attached))
		}
		if !strings.Contains(m.text, "SHA-256: "+hex.EncodeToString(sum[:])) || !strings.Contains(m.text, "- Carol (agent, optional): no decision") {
			t.Fatalf("outcome email to %s:\n%s", m.to, m.text)
		}
	}

	// Past the deadline the quiet agreement expires: Erin hears of it
	// without an attachment, and nobody gets a reminder more.
	s.Clock.Advance(2 * time.Hour)
	expired := s.waitForMail(t, "CONSENSUS.md: outcome expired: A quiet one", 1)
	if expired[0].to != quietEmails[0] || expired[0].attached != nil || !strings.Contains(expired[0].text, "No CONSENSUS.md was issued") {
		t.Fatalf("expiry email to %s (%d attached bytes):\n%s", expired[0].to, len(expired[0].attached), expired[0].text)
	}
	time.Sleep(6 * time.Second) // another run of each sweep: nothing more
	all := s.mailbox()
	perRecipient := map[string]int{}
	for _, m := range all {
		switch {
		case strings.HasPrefix(m.subject, "CONSENSUS.md: reminder: "):
			perRecipient["reminder "+m.to]++
		case strings.HasPrefix(m.subject, "CONSENSUS.md: outcome "):
			perRecipient["outcome "+m.to]++
		default:
			continue
		}
		if want := inviteIDs[m.to]; want == "" || m.inReplyTo != want || m.references != "<"+want+">" {
			t.Fatalf("%q to %s: In-Reply-To %q, References %q; want its invitation's <%s>", m.subject, m.to, m.inReplyTo, m.references, want)
		}
	}
	want := map[string]int{"reminder " + emails[0]: 1, "reminder " + emails[3]: 2, "outcome " + quietEmails[0]: 1}
	for _, e := range emails {
		want["outcome "+e] = 1
	}
	if len(perRecipient) != len(want) {
		t.Fatalf("emails per recipient %v, want %v", perRecipient, want)
	}
	for k, n := range want {
		if perRecipient[k] != n {
			t.Fatalf("emails per recipient %v, want %v", perRecipient, want)
		}
	}
}

// received is one email of the Maildir, read with a MIME parser.
type received struct {
	to, subject, messageID string
	inReplyTo, references  string
	text                   string
	attached               []byte // the attachment, nil without one
}

// mailbox reads every email the daemon delivered so far.
func (s *server) mailbox() []received {
	s.t.Helper()
	files, _ := filepath.Glob(filepath.Join(s.Maildir, "new", "*"))
	var out []received
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			s.t.Fatal(err)
		}
		mr, err := gomail.CreateReader(bytes.NewReader(raw))
		if err != nil {
			s.t.Fatal(err)
		}
		to, _ := mr.Header.AddressList("To")
		subject, _ := mr.Header.Subject()
		id, _ := mr.Header.MessageID()
		m := received{subject: subject, messageID: id, inReplyTo: strings.Trim(mr.Header.Get("In-Reply-To"), "<>"), references: mr.Header.Get("References")}
		if len(to) == 1 {
			m.to = to[0].Address
		}
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				s.t.Fatal(err)
			}
			b, _ := io.ReadAll(p.Body)
			if _, ok := p.Header.(*gomail.AttachmentHeader); ok {
				m.attached = b
			} else {
				m.text = string(b)
			}
		}
		out = append(out, m)
	}
	return out
}

// waitForMail waits until exactly n emails whose subject starts with
// prefix were delivered and returns them.
func (s *server) waitForMail(t *testing.T, prefix string, n int) []received {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var got []received
		for _, m := range s.mailbox() {
			if strings.HasPrefix(m.subject, prefix) {
				got = append(got, m)
			}
		}
		if len(got) > n {
			t.Fatalf("%d emails %q, want %d", len(got), prefix, n)
		}
		if len(got) == n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d emails %q after 30 s, want %d", len(got), prefix, n)
		}
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
