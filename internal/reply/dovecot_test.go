package reply_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/consensus-md/consensus/internal/reply"
	"github.com/consensus-md/consensus/internal/reply/replytest"
)

// TestTwoReadersOneMailbox delivers replies into a real Dovecot mailbox
// read by two readers at once (two replicas): each reply is acted on once,
// and every message leaves the inbox for the processed mailbox.
func TestTwoReadersOneMailbox(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const user, password = "replies@consensus.test", "dovecot-test-password"
	addr := replytest.Dovecot(t, user, password)
	cfg, err := reply.NewIMAPConfig("imap+plain://"+strings.Replace(user, "@", "%40", 1)+"@"+addr+"/INBOX", password)
	if err != nil {
		t.Fatal(err)
	}
	short := f.created.RevisionDigest[:12]
	msgs := [][]byte{
		signWith(t, f.message("alice@example.test", "d1", "", "text/plain; charset=utf-8", "7bit", "A first comment\n"), "example.test", "s1", f.rsaKey),
		signWith(t, f.message("alice@example.test", "d2", "", "text/plain; charset=utf-8", "7bit", "ABSTAIN "+short+"\n"), "example.test", "s1", f.rsaKey),
		f.message("alice@example.test", "d3", "", "text/plain", "7bit", "AGREE "+short+"\n"),           // unsigned: ignored
		f.message("alice@example.test", "big", "", "text/plain", "7bit", strings.Repeat("x\n", 1<<20)), // 2 MiB: not read, ignored
	}
	c, err := imapclient.DialInsecure(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(user, password).Wait(); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		cmd := c.Append("INBOX", int64(len(m)), &imap.AppendOptions{})
		if _, err := cmd.Write(m); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		r := *f.reader
		r.IMAP = cfg
		wg.Add(1)
		go func() { defer wg.Done(); r.Run(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		inbox, err := c.Status("INBOX", &imap.StatusOptions{NumMessages: true}).Wait()
		if err != nil {
			t.Fatal(err)
		}
		done, err := c.Status(reply.ProcessedMailbox, &imap.StatusOptions{NumMessages: true}).Wait()
		if err == nil && *inbox.NumMessages == 0 && *done.NumMessages == uint32(len(msgs)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the inbox was not drained: %v messages left", *inbox.NumMessages)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(f.evidenceOf(t)); n != 2 {
		t.Errorf("%d events with evidence, want 2 (a comment and an abstention)", n)
	}
	if n := f.answers(t); n != 2 {
		t.Errorf("%d answers, want 2 (two recorded; none to the unsigned or the 2 MiB message)", n)
	}
	// A reply delivered while the readers run is read at once (IDLE).
	late := signWith(t, f.message("alice@example.test", "d4", "", "text/plain; charset=utf-8", "7bit", "A comment after deciding\n"), "example.test", "s1", f.rsaKey)
	cmd := c.Append("INBOX", int64(len(late)), &imap.AppendOptions{})
	_, _ = cmd.Write(late)
	_ = cmd.Close()
	if _, err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	for f.answers(t) != 3 {
		if time.Now().After(deadline) {
			t.Fatal("the reply delivered later was not acted on")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
