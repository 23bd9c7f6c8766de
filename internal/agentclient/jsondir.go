package agentclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/consensus-md/consensus/internal/envelope"
)

// jsonDir is a local directory of JSON records, one file per invitation
// (<invitation_id>.json), written atomically. The directory is 0700 and the
// files 0600: records may hold the participant token. It never adds the
// invite secret or the email proof; envelope.Invitation and
// envelope.Envelope redact them when marshalled, so recording either is safe.
type jsonDir struct {
	dir string
}

// errNotRecorded is returned by load for an invitation with no record.
var errNotRecorded = errors.New("agent: state: invitation not recorded")

// errAlreadyRecorded is returned by create when the record exists.
var errAlreadyRecorded = errors.New("agent: state: invitation already recorded")

// openJSONDir opens (creating when missing) the directory at dir and sets its
// mode to 0700.
func openJSONDir(dir string) (*jsonDir, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("agent: state: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("agent: state: %w", err)
	}
	return &jsonDir{dir: dir}, nil
}

func (s *jsonDir) path(invitationID string) (string, error) {
	// The id becomes a file name: only canonical UUIDs, so no path tricks.
	if !envelope.IsInvitationID(invitationID) {
		return "", fmt.Errorf("agent: state: invitation id is not a lower-case UUID")
	}
	return filepath.Join(s.dir, invitationID+".json"), nil
}

// has reports whether the invitation has a record. An id that is not a UUID
// never has one. When the record's existence cannot be determined (for
// example a permission error) has returns true: processing an invitation
// twice is worse than skipping it, and load then reports the error.
func (s *jsonDir) has(invitationID string) bool {
	p, err := s.path(invitationID)
	if err != nil {
		return false
	}
	_, err = os.Lstat(p)
	return !errors.Is(err, fs.ErrNotExist)
}

// save writes v as the invitation's record, replacing any previous one
// atomically (temporary file in the same directory, fsync, rename).
func (s *jsonDir) save(invitationID string, v any) error {
	return s.write(invitationID, v, os.Rename)
}

// create writes v as the invitation's record only when it has none
// (errAlreadyRecorded otherwise): the complete file is linked into place,
// which fails when the name exists.
func (s *jsonDir) create(invitationID string, v any) error {
	err := s.write(invitationID, v, os.Link)
	if errors.Is(err, fs.ErrExist) {
		return errAlreadyRecorded
	}
	return err
}

// write writes v to a temporary file, fsyncs it, and puts it in place with
// place (rename or link).
func (s *jsonDir) write(invitationID string, v any, place func(oldpath, newpath string) error) error {
	p, err := s.path(invitationID)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("agent: state: encode %s: %w", invitationID, err)
	}
	f, err := os.CreateTemp(s.dir, "."+invitationID+".*.tmp") // created 0600
	if err != nil {
		return fmt.Errorf("agent: state: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("agent: state: %w", err)
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("agent: state: write %s: %w", invitationID, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("agent: state: sync %s: %w", invitationID, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("agent: state: %w", err)
	}
	if err := place(tmp, p); err != nil {
		return fmt.Errorf("agent: state: %w", err)
	}
	if d, err := os.Open(s.dir); err == nil {
		_ = d.Sync() // make the rename durable where the platform allows
		d.Close()
	}
	return nil
}

// load decodes the invitation's record into v. It returns errNotRecorded
// when there is none.
func (s *jsonDir) load(invitationID string, v any) error {
	p, err := s.path(invitationID)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return errNotRecorded
	}
	if err != nil {
		return fmt.Errorf("agent: state: %w", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("agent: state: decode %s: %w", invitationID, err)
	}
	return nil
}

// list returns the invitation ids with a record, sorted.
func (s *jsonDir) list() ([]string, error) {
	names, err := filepath.Glob(filepath.Join(s.dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("agent: state: %w", err)
	}
	sort.Strings(names)
	ids := make([]string, 0, len(names))
	for _, n := range names {
		ids = append(ids, strings.TrimSuffix(filepath.Base(n), ".json"))
	}
	return ids, nil
}

// remove deletes the invitation's record; a missing record is not an error.
func (s *jsonDir) remove(invitationID string) error {
	p, err := s.path(invitationID)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("agent: state: %w", err)
	}
	return nil
}
