package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// MaildirSource reads a local Maildir (the directory holding new/, cur/ and
// tmp/). Unseen messages are the files in new/ and those in cur/ without the
// S flag. MarkSeen moves a message to cur/<name>:2,<flags with S>.
type MaildirSource struct {
	dir  string
	poll time.Duration

	mu        sync.Mutex
	delivered map[string]struct{}

	done      chan struct{}
	closeOnce sync.Once
}

var _ Source = (*MaildirSource)(nil)

// NewMaildirSource opens the Maildir at dir, creating new/, cur/ and tmp/
// (0700) when missing. pollInterval is how often an empty Maildir is
// rescanned; zero means one second.
func NewMaildirSource(dir string, pollInterval time.Duration) (*MaildirSource, error) {
	if pollInterval <= 0 {
		pollInterval = time.Second
	}
	for _, sub := range []string{"new", "cur", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("ingest: maildir: %w", err)
		}
	}
	return &MaildirSource{dir: dir, poll: pollInterval, delivered: map[string]struct{}{}, done: make(chan struct{})}, nil
}

// Fetch returns the unseen messages not yet returned by this source, waiting
// (by polling) until there is at least one. Errors: ctx's error, ErrClosed,
// or a file-system error.
func (m *MaildirSource) Fetch(ctx context.Context) ([]RawMessage, error) {
	for {
		select {
		case <-m.done:
			return nil, ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		default:
		}
		msgs, err := m.scan()
		if err != nil || len(msgs) > 0 {
			return msgs, err
		}
		t := time.NewTimer(m.poll)
		select {
		case <-m.done:
			t.Stop()
			return nil, ErrClosed
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

func (m *MaildirSource) scan() ([]RawMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for _, sub := range []string{"new", "cur"} {
		entries, err := os.ReadDir(filepath.Join(m.dir, sub))
		if err != nil {
			return nil, fmt.Errorf("ingest: maildir: %w", err)
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
				continue
			}
			if sub == "cur" && maildirSeen(name) {
				continue
			}
			id := sub + "/" + name
			if _, ok := m.delivered[id]; ok {
				continue
			}
			ids = append(ids, id)
		}
	}
	sort.Strings(ids) // Maildir names start with a timestamp: oldest first
	var msgs []RawMessage
	for _, id := range ids {
		body, err := readLimited(filepath.Join(m.dir, filepath.FromSlash(id)), MaxMessageBytes)
		if errors.Is(err, os.ErrNotExist) {
			continue // moved by someone else meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("ingest: maildir: %w", err)
		}
		m.delivered[id] = struct{}{}
		msgs = append(msgs, RawMessage{ID: id, Body: body})
	}
	return msgs, nil
}

// readLimited reads at most limit+1 bytes so an oversized message is still
// handed on (and refused by ParseMessage) without filling memory.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// maildirSeen reports whether a cur/ name carries the S (seen) flag.
func maildirSeen(name string) bool {
	_, info, ok := strings.Cut(name, ":2,")
	return ok && strings.ContainsRune(info, 'S')
}

// MarkSeen moves the message to cur/ with the S flag. Errors:
// ErrUnknownMessage for an ID that is not new/<name> or cur/<name>, ErrClosed,
// or a file-system error.
func (m *MaildirSource) MarkSeen(ctx context.Context, id string) error {
	select {
	case <-m.done:
		return ErrClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	sub, name, ok := strings.Cut(id, "/")
	if !ok || (sub != "new" && sub != "cur") || name == "" || name == "." || name == ".." ||
		strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return ErrUnknownMessage
	}
	base, info, _ := strings.Cut(name, ":2,")
	if !strings.ContainsRune(info, 'S') {
		flags := []rune(info + "S")
		sort.Slice(flags, func(i, j int) bool { return flags[i] < flags[j] })
		info = string(flags)
	}
	from := filepath.Join(m.dir, sub, name)
	to := filepath.Join(m.dir, "cur", base+":2,"+info)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := os.Rename(from, to); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %v", ErrUnknownMessage, err)
		}
		return fmt.Errorf("ingest: maildir: %w", err)
	}
	delete(m.delivered, id)
	return nil
}

// Close stops a pending Fetch. It always returns nil.
func (m *MaildirSource) Close() error {
	m.closeOnce.Do(func() { close(m.done) })
	return nil
}
