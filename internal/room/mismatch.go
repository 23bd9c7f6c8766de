package room

import "fmt"

// RevisionMismatchError refuses a command that does not name the current
// revision and digest. It names the current ones, so a participant that
// missed a new revision learns which one to read and verify. It matches
// ErrRevisionMismatch with errors.Is.
type RevisionMismatchError struct {
	Current int
	Digest  string
}

// Error names the current revision number and digest.
func (e *RevisionMismatchError) Error() string {
	return fmt.Sprintf("the command does not name the current revision: the current revision is %d with digest %s; read the room, verify that revision and send its number and digest", e.Current, e.Digest)
}

// Is reports whether target is ErrRevisionMismatch.
func (e *RevisionMismatchError) Is(target error) bool { return target == ErrRevisionMismatch }
