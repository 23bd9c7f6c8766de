package ingest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/envelope/envelopetest"
)

func writeMaildirFile(t *testing.T, dir, sub, name string, body []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, sub, name), body, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestMaildirSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, err := NewMaildirSource(dir, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	invite := readFixture(t, "plain-7bit.rfc822")
	writeMaildirFile(t, dir, "new", "1700000000.1.host", invite)
	writeMaildirFile(t, dir, "new", "1700000001.2.host", readFixture(t, "unrelated.rfc822"))
	writeMaildirFile(t, dir, "cur", "1600000000.3.host:2,S", readFixture(t, "plain-7bit.rfc822")) // already seen
	writeMaildirFile(t, dir, "cur", "1600000000.4.host:2,F", readFixture(t, "iso-8859-1.rfc822")) // read by nobody, flagged

	msgs, err := src.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string][]byte{}
	for _, m := range msgs {
		ids[m.ID] = m.Body
	}
	want := []string{"new/1700000000.1.host", "new/1700000001.2.host", "cur/1600000000.4.host:2,F"}
	if len(ids) != len(want) {
		t.Fatalf("fetched %v, want %v", keys(ids), want)
	}
	for _, id := range want {
		if _, ok := ids[id]; !ok {
			t.Fatalf("missing %s in %v", id, keys(ids))
		}
	}
	if inv, err := ParseMessageBytes(ids["new/1700000000.1.host"], envelope.Policy{}); err != nil || inv.InvitationID != envelopetest.InvitationID {
		t.Fatalf("fetched invitation does not parse: %v", err)
	}

	if err := src.MarkSeen(ctx, "new/1700000000.1.host"); err != nil {
		t.Fatal(err)
	}
	if err := src.MarkSeen(ctx, "cur/1600000000.4.host:2,F"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"cur/1700000000.1.host:2,S", "cur/1600000000.4.host:2,FS"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Fatalf("expected %s: %v", p, err)
		}
	}
	for _, bad := range []string{"new/../../etc/passwd", "tmp/x", "new/", "new/.hidden", "new/nope"} {
		if err := src.MarkSeen(ctx, bad); !errors.Is(err, ErrUnknownMessage) {
			t.Errorf("MarkSeen(%q) = %v, want ErrUnknownMessage", bad, err)
		}
	}

	// The unrelated message was left alone: it is not yielded again by this
	// source, and a new message arriving later is delivered.
	go func() {
		time.Sleep(50 * time.Millisecond)
		tmp := filepath.Join(dir, "tmp", "1700000002.5.host")
		if err := os.WriteFile(tmp, readFixture(t, "quoted-printable.rfc822"), 0o600); err == nil {
			_ = os.Rename(tmp, filepath.Join(dir, "new", "1700000002.5.host"))
		}
	}()
	msgs, err = src.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].ID != "new/1700000002.5.host" {
		t.Fatalf("second fetch = %v", msgIDs(msgs))
	}

	// A restarted source yields the message left alone once more.
	src2, err := NewMaildirSource(dir, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err = src2.Fetch(ctx)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("restart fetch = %v, %v", msgIDs(msgs), err)
	}

	// Close unblocks a waiting Fetch.
	done := make(chan error, 1)
	go func() { _, err := src2.Fetch(ctx); done <- err }()
	time.Sleep(50 * time.Millisecond)
	src2.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("Fetch after Close = %v", err)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func msgIDs(msgs []RawMessage) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.ID)
	}
	return out
}
