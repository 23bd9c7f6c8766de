package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/consensus-md/consensus/internal/envelope"
)

// State is a local directory recording which invitations were processed, one
// JSON file per invitation (<invitation_id>.json). The directory is 0700 and
// the files 0600: the caller may store the tokens it obtains later. State never
// adds the invite secret or the email proof; Invitation and Envelope redact
// them when marshalled, so recording either is safe.
type State struct {
	dir string
}

// ErrNotRecorded is returned by Load for an invitation with no record.
var ErrNotRecorded = errors.New("ingest: invitation not recorded")

// OpenState opens (creating when missing) the state directory at dir and
// sets its mode to 0700.
func OpenState(dir string) (*State, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ingest: state: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ingest: state: %w", err)
	}
	return &State{dir: dir}, nil
}

func (s *State) path(invitationID string) (string, error) {
	// The id becomes a file name: only canonical UUIDs, so no path tricks.
	if !envelope.IsInvitationID(invitationID) {
		return "", fmt.Errorf("ingest: state: invitation id is not a lower-case UUID")
	}
	return filepath.Join(s.dir, invitationID+".json"), nil
}

// Seen reports whether the invitation has a record. An id that is not a UUID
// is never seen. When the record's existence cannot be determined (for
// example a permission error) Seen returns true: processing an invitation
// twice is worse than skipping it, and Load then reports the error.
func (s *State) Seen(invitationID string) bool {
	p, err := s.path(invitationID)
	if err != nil {
		return false
	}
	_, err = os.Lstat(p)
	return !errors.Is(err, fs.ErrNotExist)
}

// Record writes v as the invitation's record, replacing any previous one
// atomically (temporary file in the same directory, fsync, rename).
func (s *State) Record(invitationID string, v any) error {
	p, err := s.path(invitationID)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("ingest: state: encode %s: %w", invitationID, err)
	}
	f, err := os.CreateTemp(s.dir, "."+invitationID+".*.tmp") // created 0600
	if err != nil {
		return fmt.Errorf("ingest: state: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("ingest: state: %w", err)
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("ingest: state: write %s: %w", invitationID, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("ingest: state: sync %s: %w", invitationID, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("ingest: state: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("ingest: state: %w", err)
	}
	if d, err := os.Open(s.dir); err == nil {
		_ = d.Sync() // make the rename durable where the platform allows
		d.Close()
	}
	return nil
}

// Load decodes the invitation's record into v. It returns ErrNotRecorded when
// there is none.
func (s *State) Load(invitationID string, v any) error {
	p, err := s.path(invitationID)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return ErrNotRecorded
	}
	if err != nil {
		return fmt.Errorf("ingest: state: %w", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("ingest: state: decode %s: %w", invitationID, err)
	}
	return nil
}
