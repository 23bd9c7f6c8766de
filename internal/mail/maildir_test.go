package mail

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestMaildirDelivers(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "Maildir")
	tr, err := Open("maildir://"+dir, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer tr.Close()
	for _, sub := range []string{"cur", "new", "tmp"} {
		fi, err := os.Stat(filepath.Join(dir, sub))
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v, %v", sub, fi, err)
		}
	}

	m := testMessage()
	rc, err := tr.Send(context.Background(), m)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	name, ok := strings.CutPrefix(rc.Reply, "maildir: new/")
	if !ok || name == "" || strings.Contains(name, "/") {
		t.Fatalf("Reply = %q", rc.Reply)
	}
	path := filepath.Join(dir, "new", name)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("delivered file: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	got, _ := os.ReadFile(path)
	want, _ := Compose(m)
	want = bytes.ReplaceAll(want, []byte("\r\n"), []byte("\n"))
	if !bytes.Equal(got, want) {
		t.Errorf("file content differs from Compose output:\n got %q\nwant %q", got, want)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(left) != 0 {
		t.Errorf("tmp/ not empty: %v", left)
	}
}

func TestMaildirConcurrentSends(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tr, err := OpenMaildir(dir)
	if err != nil {
		t.Fatalf("OpenMaildir: %v", err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			m := testMessage()
			m.MessageID = fmt.Sprintf("msg-%d@consensus.md", i)
			if _, err := tr.Send(context.Background(), m); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Send: %v", err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "new"))
	if err != nil || len(entries) != n {
		t.Fatalf("new/ has %d entries (%v), want %d", len(entries), err, n)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, "new", e.Name()))
		for i := range n {
			if bytes.Contains(b, fmt.Appendf(nil, "<msg-%d@consensus.md>", i)) {
				seen[fmt.Sprint(i)] = true
			}
		}
	}
	if len(seen) != n {
		t.Errorf("distinct messages delivered: %d, want %d", len(seen), n)
	}
}

func TestMaildirRejectsInvalidMessagePermanently(t *testing.T) {
	t.Parallel()
	tr, err := OpenMaildir(t.TempDir())
	if err != nil {
		t.Fatalf("OpenMaildir: %v", err)
	}
	m := testMessage()
	m.To = "nobody"
	if _, err := tr.Send(context.Background(), m); !IsPermanent(err) {
		t.Errorf("Send = %v, want a permanent error", err)
	}
}

func TestMaildirCancelledContext(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tr, err := OpenMaildir(dir)
	if err != nil {
		t.Fatalf("OpenMaildir: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tr.Send(ctx, testMessage()); err == nil || IsPermanent(err) {
		t.Errorf("Send = %v, want a temporary error", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "new")); len(entries) != 0 {
		t.Errorf("delivered despite cancelled context: %v", entries)
	}
}
