package room

import (
	"errors"
	"fmt"
)

// Domain errors. Each is a value callers match with errors.Is; the HTTP
// layer keeps the one table that gives each its status and problem code.
var (
	// ErrNotFound: the thing does not exist or must look as if it did not.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a uniqueness rule would be broken, which the use cases
	// prevent under their locks; seeing it means a concurrent request won a
	// race the locks did not cover, and a retry sees the winner's state.
	ErrConflict = errors.New("conflict")
	// ErrInvalid: an input is malformed. Every *ValidationError matches it.
	ErrInvalid = errors.New("invalid input")
	// ErrRevisionMismatch: the command names a revision or digest that is not current.
	ErrRevisionMismatch = errors.New("the command does not name the current revision and digest")
	// ErrRoomClosed: the outcome is final; no event is accepted.
	ErrRoomClosed = errors.New("the outcome is final; the room accepts no more events")
	// ErrAlreadyDecided: the participant already made its terminal decision.
	ErrAlreadyDecided = errors.New("this participant has already made its terminal decision")
	// ErrEventLimit: the participant stored the maximum number of events on this revision.
	ErrEventLimit = errors.New("this participant has reached the event limit for this revision")
	// ErrIdempotencyKeyReused: the key was used before for a different command.
	ErrIdempotencyKeyReused = errors.New("this Idempotency-Key was used for a different command")
	// ErrClaimConflict: the slot was claimed with different input.
	ErrClaimConflict = errors.New("this participant slot was already claimed with a different proof, inbox or runtime endpoint")
	// ErrProofMismatch: the email proof or inbox is not this invitation's.
	ErrProofMismatch = errors.New("the email proof or inbox does not match this invitation")
	// ErrUnavailable: the database is down, unreachable or too slow. It
	// says nothing about the request: it must never be answered as a bad
	// credential or a missing resource, only as "retry later".
	ErrUnavailable = errors.New("the database is unavailable or too slow")
)

// RevisionMismatchError is the ErrRevisionMismatch that Admit returns: it
// names the revision a command must carry instead, so the refusal tells
// the participant what to send (after verifying that revision).
type RevisionMismatchError struct {
	Revision int
	Digest   string
}

// Error names the current revision number and digest.
func (e *RevisionMismatchError) Error() string {
	return fmt.Sprintf("the command does not name the current revision: it is revision %d with digest %s; read the room and verify that revision before sending its number and digest", e.Revision, e.Digest)
}

// Is reports whether target is ErrRevisionMismatch.
func (e *RevisionMismatchError) Is(target error) bool { return target == ErrRevisionMismatch }

// ValidationError reports one invalid input. Field names the body member,
// header or query parameter at fault; it is empty when the input as a whole
// is malformed. It matches ErrInvalid with errors.Is, so callers that only
// need the kind do not have to know the type.
type ValidationError struct {
	Field  string
	Reason string
}

// Error returns "field: reason", or the reason alone when no field is named.
func (e *ValidationError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Reason)
}

// Is reports whether target is ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

func invalid(field, format string, args ...any) *ValidationError {
	return &ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
