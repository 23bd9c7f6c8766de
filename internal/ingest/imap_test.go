package ingest

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"

	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/envelope/envelopetest"
)

const (
	imapUser = "agent"
	imapPass = "correct horse"
)

type testLogger struct{ t *testing.T }

func (l testLogger) Printf(format string, args ...any) { l.t.Logf("imapserver: "+format, args...) }

// literal adapts a byte slice to imap.LiteralReader.
type literal struct {
	*bytes.Reader
	n int64
}

func (l literal) Size() int64 { return l.n }

func appendMsg(t *testing.T, u *imapmemserver.User, body []byte) imap.UID {
	t.Helper()
	data, err := u.Append("INBOX", literal{bytes.NewReader(body), int64(len(body))}, &imap.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return data.UID
}

// newIMAPServer builds a real IMAP server (in memory) with the test user and
// an empty INBOX; opts sets the rest (capabilities, TLS, InsecureAuth). The
// server is closed when the test ends; the caller makes it serve.
func newIMAPServer(t *testing.T, opts imapserver.Options) (*imapserver.Server, *imapmemserver.User) {
	t.Helper()
	mem := imapmemserver.New()
	user := imapmemserver.NewUser(imapUser, imapPass)
	if err := user.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
	mem.AddUser(user)
	opts.NewSession = func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
		return mem.NewSession(), nil, nil
	}
	opts.Logger = testLogger{t}
	srv := imapserver.New(&opts)
	t.Cleanup(func() { srv.Close() })
	return srv, user
}

// startIMAP runs a real IMAP server (in memory) on a loopback port; caps nil
// means IMAP4rev1 only, without IDLE.
func startIMAP(t *testing.T, caps imap.CapSet) (string, *imapmemserver.User) {
	t.Helper()
	srv, user := newIMAPServer(t, imapserver.Options{Caps: caps, InsecureAuth: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	return ln.Addr().String(), user
}

// seenUIDs asks the server, over its own connection, which messages are \Seen.
func seenUIDs(t *testing.T, addr string) []imap.UID {
	t.Helper()
	c, err := imapclient.DialInsecure(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(imapUser, imapPass).Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
		t.Fatal(err)
	}
	data, err := c.UIDSearch(&imap.SearchCriteria{Flag: []imap.Flag{imap.FlagSeen}}, nil).Wait()
	if err != nil {
		t.Fatal(err)
	}
	return data.AllUIDs()
}

func newTestIMAPSource(t *testing.T, addr string, poll time.Duration) *IMAPSource {
	t.Helper()
	src, err := NewIMAPSource(IMAPConfig{Addr: addr, Username: imapUser, Password: imapPass, PollInterval: poll})
	if err != nil {
		t.Fatal(err)
	}
	src.minBackoff = 10 * time.Millisecond
	t.Cleanup(func() { src.Close() })
	return src
}

func fetchIDs(t *testing.T, ctx context.Context, src Source) map[string][]byte {
	t.Helper()
	msgs, err := src.Fetch(ctx)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	out := map[string][]byte{}
	for _, m := range msgs {
		out[m.ID] = m.Body
	}
	return out
}

func testIMAPSource(t *testing.T, caps imap.CapSet, poll time.Duration) {
	addr, user := startIMAP(t, caps)
	invite := readFixture(t, "plain-7bit.rfc822")
	uid1 := appendMsg(t, user, invite)
	appendMsg(t, user, readFixture(t, "unrelated.rfc822"))
	appendMsg(t, user, readFixture(t, "multipart-base64.rfc822"))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	src := newTestIMAPSource(t, addr, poll)

	got := fetchIDs(t, ctx, src)
	if len(got) != 3 {
		t.Fatalf("fetched %d messages, want 3", len(got))
	}
	var id1 string
	for id, body := range got {
		if strings.HasSuffix(id, ":"+strconv.FormatUint(uint64(uid1), 10)) {
			id1 = id
			if !bytes.Equal(body, invite) {
				t.Fatal("fetched body differs from the stored message")
			}
		}
	}
	if id1 == "" {
		t.Fatalf("message uid %d missing from %v", uid1, got)
	}
	if inv, err := ParseMessageBytes(got[id1], envelope.Policy{}); err != nil || inv.InvitationID != envelopetest.InvitationID {
		t.Fatalf("fetched invitation does not parse: %v", err)
	}
	// BODY.PEEK: fetching did not mark anything seen.
	if s := seenUIDs(t, addr); len(s) != 0 {
		t.Fatalf("fetch marked %v seen", s)
	}
	if err := src.MarkSeen(ctx, id1); err != nil {
		t.Fatalf("MarkSeen: %v", err)
	}
	if s := seenUIDs(t, addr); len(s) != 1 || s[0] != uid1 {
		t.Fatalf("seen = %v, want [%d]", s, uid1)
	}
	if err := src.MarkSeen(ctx, "1:1"+id1); !errors.Is(err, ErrUnknownMessage) {
		t.Fatalf("MarkSeen with a foreign UIDVALIDITY = %v", err)
	}
	if err := src.MarkSeen(ctx, "garbage"); !errors.Is(err, ErrUnknownMessage) {
		t.Fatalf("MarkSeen(garbage) = %v", err)
	}

	// The two left alone are not yielded again; a message appended while
	// the source waits is delivered.
	go func() {
		time.Sleep(200 * time.Millisecond)
		body := readFixture(t, "quoted-printable.rfc822")
		if _, err := user.Append("INBOX", literal{bytes.NewReader(body), int64(len(body))}, &imap.AppendOptions{}); err != nil {
			t.Errorf("append: %v", err)
		}
	}()
	start := time.Now()
	got = fetchIDs(t, ctx, src)
	if len(got) != 1 {
		t.Fatalf("second fetch = %d messages, want the new one only", len(got))
	}
	for _, body := range got {
		if inv, err := ParseMessageBytes(body, envelope.Policy{}); err != nil || !strings.HasPrefix(inv.Envelope.Title, "Livraison") {
			t.Fatalf("new message: %v", err)
		}
	}
	t.Logf("new mail delivered after %v", time.Since(start))

	// Close unblocks a waiting Fetch.
	errc := make(chan error, 1)
	go func() { _, err := src.Fetch(ctx); errc <- err }()
	time.Sleep(100 * time.Millisecond)
	src.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Fetch after Close = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock Fetch")
	}
}

func TestIMAPSourceIdle(t *testing.T) {
	t.Parallel()
	// A poll interval far beyond the test timeout: only IDLE can deliver
	// the new message in time.
	testIMAPSource(t, imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapIdle: {}}, time.Hour)
}

func TestIMAPSourcePolling(t *testing.T) {
	t.Parallel()
	testIMAPSource(t, nil, 100*time.Millisecond)
}

func TestIMAPSourceIdleUsed(t *testing.T) {
	t.Parallel()
	addr, _ := startIMAP(t, imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapIdle: {}})
	src := newTestIMAPSource(t, addr, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := src.Fetch(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Fetch on an empty mailbox = %v, want deadline", err)
	}
	if !src.hasIdle {
		t.Fatal("server advertises IDLE but the source did not use it")
	}
}

func TestIMAPSourceReconnects(t *testing.T) {
	t.Parallel()
	// Nothing listens at first: Fetch keeps retrying with backoff, then
	// succeeds once the server comes up on that address.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	src := newTestIMAPSource(t, addr, 50*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	srv, user := newIMAPServer(t, imapserver.Options{InsecureAuth: true})
	appendMsg(t, user, readFixture(t, "plain-7bit.rfc822"))
	go func() {
		time.Sleep(150 * time.Millisecond)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("relisten: %v", err)
			return
		}
		srv.Serve(ln)
	}()
	if got := fetchIDs(t, ctx, src); len(got) != 1 {
		t.Fatalf("fetched %d, want 1", len(got))
	}
	if src.backoff != 0 {
		t.Fatalf("backoff not reset after success: %v", src.backoff)
	}
}

func TestIMAPSourceBadLogin(t *testing.T) {
	t.Parallel()
	addr, _ := startIMAP(t, nil)
	src, err := NewIMAPSource(IMAPConfig{Addr: addr, Username: imapUser, Password: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = src.Fetch(ctx)
	var ie *imap.Error
	if !errors.As(err, &ie) {
		t.Fatalf("Fetch with a wrong password = %v, want the server's refusal", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Fatal("error echoes the password")
	}
}

func TestIMAPConfig(t *testing.T) {
	t.Parallel()
	cfg, err := ParseIMAPURL("imaps://agent@mail.example/Invitations")
	if err != nil || !cfg.TLS || cfg.Addr != "mail.example:993" || cfg.Mailbox != "Invitations" || cfg.Username != "agent" {
		t.Fatalf("imaps url = %+v, %v", cfg, err)
	}
	cfg, err = ParseIMAPURL("imap://agent:pw@mail.example")
	if err != nil || !cfg.StartTLS || cfg.Addr != "mail.example:143" || cfg.Mailbox != "INBOX" || cfg.Password != "pw" {
		t.Fatalf("imap url = %+v, %v", cfg, err)
	}
	if _, err := ParseIMAPURL("imap+plain://agent@127.0.0.1:1143/INBOX"); err != nil {
		t.Fatalf("plaintext on loopback: %v", err)
	}
	if _, err := ParseIMAPURL("imap+plain://agent@mail.example/INBOX"); err == nil {
		t.Fatal("plaintext LOGIN to a remote host accepted")
	}
	if _, err := NewIMAPSource(IMAPConfig{Addr: "mail.example:143", Username: "a", Password: "p"}); err == nil {
		t.Fatal("plaintext config to a remote host accepted")
	}
	if _, err := NewIMAPSource(IMAPConfig{Addr: "mail.example", Username: "a", TLS: true, StartTLS: true}); err == nil {
		t.Fatal("TLS and StartTLS together accepted")
	}
	s := IMAPConfig{Addr: "a:1", Username: "u", Password: "hunter2-secret"}
	for _, out := range []string{s.String(), s.GoString()} {
		if strings.Contains(out, "hunter2-secret") {
			t.Fatal("config formatting leaks the password")
		}
	}
}
