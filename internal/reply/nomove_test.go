package reply_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/consensus-md/consensus/internal/mailsink"
	"github.com/consensus-md/consensus/internal/reply"
)

// TestReaderWithoutMove: against a server without MOVE or UIDPLUS (the
// in-process go-imap server), a handled message is copied to the
// processed mailbox, flagged deleted and expunged.
func TestReaderWithoutMove(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sink, err := mailsink.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	const box, password = "replies@consensus.test", "memserver-password"
	if err := sink.AddMailbox(box, password); err != nil {
		t.Fatal(err)
	}
	c, err := imapclient.DialInsecure(sink.IMAPAddr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(box, password).Wait(); err != nil {
		t.Fatal(err)
	}
	if c.Caps().Has(imap.CapMove) {
		t.Fatal("the in-process server offers MOVE: this test needs one without")
	}
	raw := signWith(t, f.message("alice@example.test", "nomove", "", "text/plain; charset=utf-8", "7bit", "A comment\n"), "example.test", "s1", f.rsaKey)
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
	cfg, err := reply.NewIMAPConfig("imap+plain://replies%40consensus.test@"+sink.IMAPAddr+"/INBOX", password)
	if err != nil {
		t.Fatal(err)
	}
	r := *f.reader
	r.IMAP = cfg
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); r.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		inbox, err := c.Status("INBOX", &imap.StatusOptions{NumMessages: true}).Wait()
		if err != nil {
			t.Fatal(err)
		}
		done, err := c.Status(reply.ProcessedMailbox, &imap.StatusOptions{NumMessages: true}).Wait()
		if err == nil && *inbox.NumMessages == 0 && *done.NumMessages == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("inbox %d, processed %v", *inbox.NumMessages, err)
		}
	}
	if n := f.answers(t); n != 1 {
		t.Fatalf("%d answers, want 1", n)
	}
}
