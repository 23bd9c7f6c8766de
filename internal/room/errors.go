package room

import (
	"errors"
	"fmt"
)

// Domain errors. The HTTP layer maps each to one status and problem code.
var (
	// ErrNotFound: the thing does not exist or must look as if it did not.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a uniqueness rule would be broken.
	ErrConflict = errors.New("conflict")
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
)

// ValidationError reports one invalid input field.
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("%s: %s", e.Field, e.Reason)
}

func invalid(field, format string, args ...any) *ValidationError {
	return &ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
