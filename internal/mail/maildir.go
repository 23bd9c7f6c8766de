package mail

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Maildir delivers messages into a Maildir: each message is written to
// tmp/, synced, then renamed into new/, so a reader never sees a partial file.
type Maildir struct {
	dir      string
	hostname string
}

// OpenMaildir returns a Maildir transport for the absolute directory dir,
// creating dir and its cur/, new/ and tmp/ subdirectories (mode 0700) when
// missing. It fails when dir is relative or cannot be created.
func OpenMaildir(dir string) (*Maildir, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("mail: maildir %q: path must be absolute", dir)
	}
	for _, sub := range []string{"cur", "new", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("mail: maildir: %w", err)
		}
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	// The Maildir convention escapes "/" and ":" in the host part of a name.
	host = strings.NewReplacer("/", `\057`, ":", `\072`).Replace(host)
	return &Maildir{dir: dir, hostname: host}, nil
}

// Send composes m and delivers it into new/ with LF line endings. It returns a *PermanentError
// when m is invalid, and a temporary error when the file system fails.
func (d *Maildir) Send(ctx context.Context, m *Message) (Receipt, error) {
	raw, err := Compose(m)
	if err != nil {
		return Receipt{}, &PermanentError{Err: err}
	}
	// Maildir files use the local line ending, LF, as mail readers and
	// line-oriented tools (sed, grep) expect; CRLF is for the wire.
	raw = bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n"))
	if err := ctx.Err(); err != nil {
		return Receipt{}, fmt.Errorf("mail: maildir: %w", err)
	}
	name, err := d.uniqueName()
	if err != nil {
		return Receipt{}, err
	}
	tmpPath := filepath.Join(d.dir, "tmp", name)
	if err := writeSynced(tmpPath, raw); err != nil {
		return Receipt{}, fmt.Errorf("mail: maildir: %w", err)
	}
	if err := os.Rename(tmpPath, filepath.Join(d.dir, "new", name)); err != nil {
		_ = os.Remove(tmpPath)
		return Receipt{}, fmt.Errorf("mail: maildir: %w", err)
	}
	// The rename is only durable once the directory entry is on disk.
	if err := syncDir(filepath.Join(d.dir, "new")); err != nil {
		return Receipt{}, fmt.Errorf("mail: maildir: %w", err)
	}
	return Receipt{Reply: "maildir: new/" + name}, nil
}

// Close does nothing: a Maildir holds no resources between sends.
func (d *Maildir) Close() error { return nil }

// uniqueName follows the Maildir convention "time.unique.host": the time in
// nanoseconds, then the process id and random bits, so names never collide
// across concurrent senders, processes or replicas sharing the directory.
func (d *Maildir) uniqueName() (string, error) {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("mail: maildir: random name: %w", err)
	}
	return strconv.FormatInt(time.Now().UnixNano(), 10) +
		".P" + strconv.Itoa(os.Getpid()) + "R" + hex.EncodeToString(r[:]) +
		"." + d.hostname, nil
}

// writeSynced creates path (it must not exist) with mode 0600, writes data
// and syncs it to disk; on failure it removes the partial file.
func writeSynced(path string, data []byte) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	// Some file systems cannot sync a directory; the rename still happened.
	if errors.Is(err, os.ErrInvalid) {
		return nil
	}
	return err
}
