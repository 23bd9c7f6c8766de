package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/record"
	"github.com/consensus-md/consensus/internal/reply/replytest"
	"github.com/consensus-md/consensus/internal/servertest"
)

// TestReplyDecidesThroughTheDaemon: a person agrees by replying to her
// invitation email. The daemon reads the reply from a real Dovecot
// mailbox, checks its DKIM signature against a key a DNS server on
// loopback publishes, and the agreement shows in the room with its
// evidence; once the agent agrees too, CONSENSUS.md states the reply's
// evidence and both record verifiers re-check the DKIM signature offline.
func TestReplyDecidesThroughTheDaemon(t *testing.T) {
	t.Parallel()
	const box, password = "replies@consensus.test", "dovecot-e2e-password"
	imapAddr := replytest.Dovecot(t, box, password)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	dnsAddr := replytest.DNS(t, map[string]string{"s1._domainkey.agents.example": replytest.KeyRecord(t, key.Public())})
	s := startServer(t, servertest.Options{Settings: map[string]string{
		"CONSENSUS_REPLY_ADDRESS":       box,
		"CONSENSUS_REPLY_IMAP_URL":      "imap+plain://" + strings.Replace(box, "@", "%40", 1) + "@" + imapAddr + "/INBOX",
		"CONSENSUS_REPLY_IMAP_PASSWORD": password,
		"CONSENSUS_DNS_RESOLVER":        dnsAddr,
	}})
	c := s.create("Reply to decide", s.future(), participantSpec{"Alice", "human", true}, participantSpec{"Bob", "agent", true})
	alice := c.Participants[0]

	// The invitation carries the Reply-To and says what to reply.
	raw := s.mailFor(alice.InvitationID)
	msg, err := mail.ReadMessage(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	replyTo := msg.Header.Get("Reply-To")
	if !strings.HasPrefix(replyTo, "replies+") || !strings.HasSuffix(replyTo, "@consensus.test") {
		t.Fatalf("Reply-To %q", replyTo)
	}
	short := c.RevisionDigest[:12]
	if !strings.Contains(string(raw), "AGREE "+short+" on the first line") {
		t.Fatal("the invitation does not say what to reply")
	}

	// Alice replies from her mailbox, signed by her domain.
	body := fmt.Sprintf("AGREE %s\r\n\r\nOn %s, Consensus wrote:\r\n> You are invited\r\n", short, time.Now().Format("Mon, 2 Jan 2006"))
	reply1 := fmt.Sprintf("From: Alice <%s>\r\nTo: %s\r\nSubject: Re: %s\r\nMessage-ID: <agree-1@agents.example>\r\nDate: %s\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n%s",
		alice.Email, replyTo, msg.Header.Get("Subject"), time.Now().Format(time.RFC1123Z), body)
	signed := replytest.Sign(t, []byte(reply1), "agents.example", "s1", key)
	appendTo(t, imapAddr, box, password, signed)

	bob, _ := s.joinKeyed(c.Participants[1].InvitationID, newKey("bob replies"))
	var evidence map[string]any
	for deadline := time.Now().Add(30 * time.Second); evidence == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the reply was not recorded")
		}
		r := bob.room()
		expect(t, r, 200, "")
		for _, e := range r.json(t)["events"].([]any) {
			ev := e.(map[string]any)
			if ev["action"] == "agree" && ev["evidence"] != nil {
				evidence = ev["evidence"].(map[string]any)
			}
		}
	}
	t.Logf("the reply's evidence as the room shows it: %v", evidence)
	if evidence["from"] != alice.Email || evidence["dkim"].(map[string]any)["domain"] != "agents.example" {
		t.Fatalf("evidence %v", evidence)
	}
	// Exactly one answer goes to Alice, threaded under her reply and her
	// invitation.
	threadedUnder(t, s.waitForAnswer(alice.Email), "<agree-1@agents.example>", msg.Header.Get("Message-Id"))

	// Bob bound a key: a reply cannot sign his decision, so it is refused,
	// with the reason, in one answer to him.
	bobMail, err := mail.ReadMessage(strings.NewReader(string(s.mailFor(c.Participants[1].InvitationID))))
	if err != nil {
		t.Fatal(err)
	}
	reply2 := strings.NewReplacer(alice.Email, c.Participants[1].Email, replyTo, bobMail.Header.Get("Reply-To"), "agree-1@", "bob-1@").Replace(reply1)
	appendTo(t, imapAddr, box, password, replytest.Sign(t, []byte(reply2), "agents.example", "s1", key))
	answer := s.waitForAnswer(c.Participants[1].Email)
	if !strings.Contains(answer, "bound to a key") {
		t.Fatalf("answer to a keyed participant:\n%s", answer)
	}
	threadedUnder(t, answer, "<bob-1@agents.example>", bobMail.Header.Get("Message-Id"))
	bob.say("bob-agrees-1", "agree", "")
	rec := bob.agent.record(nil)
	expect(t, rec, 200, "")
	art := bob.agent.artifact("GET")
	expect(t, art, 200, "")
	// CONSENSUS.md states Alice's decision came from her reply, with the
	// evidence the record carries; Bob's, posted over HTTP, has no line.
	sum := sha256.Sum256(signed)
	line := fmt.Sprintf("- Participant Alice (`%s`): recorded from a reply email: From `%s`, DKIM d=`agents.example` s=`s1`, "+
		"Message-ID `<agree-1@agents.example>`, SHA-256 of the message `%s`\n", alice.ParticipantID, alice.Email, hex.EncodeToString(sum[:]))
	if !strings.Contains(string(art.body), line) || strings.Count(string(art.body), "recorded from a reply email") != 1 {
		t.Fatalf("CONSENSUS.md lacks the reply line %q:\n%s", line, art.body)
	}
	jwks := s.do("GET", "/.well-known/consensus-keys", nil, nil)
	goFailed, nodeFailed := verifyBoth(t, rec.body, art.body, jwks.body)
	if len(goFailed) != 0 || len(nodeFailed) != 0 {
		t.Fatalf("record with reply evidence: Go failed %v, Node failed %v", goFailed, nodeFailed)
	}
	// The raw reply ties to its event; a changed byte of it does not.
	set, err := jwk.ParseSet(jwks.body)
	if err != nil {
		t.Fatal(err)
	}
	if rep := record.Verify(rec.body, record.Options{Keys: &set, Messages: [][]byte{signed}}); !rep.OK() {
		t.Fatalf("the reply as sent: %v", rep.FailedChecks())
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{"record.json": rec.body, "keys.json": jwks.body, "reply.eml": signed} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("node", "../../tools/verify-record.mjs", filepath.Join(dir, "record.json"), "--keys", filepath.Join(dir, "keys.json"),
		"--message", filepath.Join(dir, "reply.eml")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "given: each is the raw message") {
		t.Fatalf("node verifier with the reply: %v\n%s", err, out)
	}
	tampered := []byte(strings.Replace(string(signed), "AGREE", "AGREe", 1))
	if rep := record.Verify(rec.body, record.Options{Keys: &set, Messages: [][]byte{tampered}}); !contains(rep.FailedChecks(), "reply-evidence") {
		t.Fatalf("a changed reply: %v", rep.FailedChecks())
	}
	// One changed byte of the stored signed header fields fails both.
	changed := []byte(strings.Replace(string(rec.body), "subject:Re:", "subject:RE:", 1))
	goFailed, nodeFailed = verifyBoth(t, changed, art.body, jwks.body)
	if !contains(goFailed, "reply-evidence") || !contains(nodeFailed, "reply-evidence") {
		t.Fatalf("a changed signed header: Go failed %v, Node failed %v", goFailed, nodeFailed)
	}
}

// threadedUnder fails unless the raw answer's In-Reply-To is the reply it
// answers and its References are the invitation's email, then the reply.
func threadedUnder(t *testing.T, raw, reply, invitation string) {
	t.Helper()
	m, err := mail.ReadMessage(strings.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Header.Get("In-Reply-To"); got != reply {
		t.Fatalf("answer In-Reply-To %q, want %q", got, reply)
	}
	if got, want := m.Header.Get("References"), invitation+" "+reply; got != want || invitation == "" {
		t.Fatalf("answer References %q, want %q", got, want)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// mailFor waits for the raw invitation email that mentions invitationID
// (not a later email of the invitation: a notice, a reminder, the outcome).
func (s *server) mailFor(invitationID string) []byte {
	s.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(s.Maildir, "new", "*"))
		for _, f := range files {
			if raw, err := os.ReadFile(f); err == nil && strings.Contains(string(raw), invitationID) && strings.Contains(string(raw), "\nSubject: CONSENSUS.md: invitation: ") {
				return raw
			}
		}
	}
	s.t.Fatalf("no email for %s", invitationID)
	return nil
}

// waitForAnswer waits for exactly one answer email to addr and returns it.
func (s *server) waitForAnswer(addr string) string {
	s.t.Helper()
	var last string
	count := func() int {
		n := 0
		files, _ := filepath.Glob(filepath.Join(s.Maildir, "new", "*"))
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err == nil && strings.Contains(string(raw), "Subject: CONSENSUS.md: your reply:") && strings.Contains(string(raw), "To: <"+addr+">") {
				n++
				last = string(raw)
			}
		}
		return n
	}
	for deadline := time.Now().Add(20 * time.Second); count() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			s.t.Fatalf("no answer to %s", addr)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := count(); n != 1 {
		s.t.Fatalf("%d answers to %s, want 1", n, addr)
	}
	return last
}

// appendTo delivers raw into the INBOX of the mailbox.
func appendTo(t *testing.T, addr, user, password string, raw []byte) {
	t.Helper()
	c, err := imapclient.DialInsecure(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(user, password).Wait(); err != nil {
		t.Fatal(err)
	}
	cmd := c.Append("INBOX", int64(len(raw)), &imap.AppendOptions{})
	if _, err := cmd.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}
