package room

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestValidationErrorIsInvalid: every field error matches ErrInvalid, also
// wrapped, and reads "field: reason" or, without a field, the reason alone.
func TestValidationErrorIsInvalid(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("venue: claim: %w", invalid("inbox", "must be at most %d bytes", 320))
	if !errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotFound) {
		t.Fatalf("errors.Is on %v", err)
	}
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Error() != "inbox: must be at most 320 bytes" {
		t.Fatalf("%v", err)
	}
	if got := (&ValidationError{Reason: "the body must be one JSON object"}).Error(); got != "the body must be one JSON object" {
		t.Fatalf("without a field: %q", got)
	}
}

// TestRevisionMismatchNamesTheCurrentRevision: Admit's refusal matches
// ErrRevisionMismatch and names the revision and digest to send instead.
func TestRevisionMismatchNamesTheCurrentRevision(t *testing.T) {
	t.Parallel()
	digest := "5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592"
	_, err := Admit(Snapshot{Revision: 1, RevisionDigest: digest}, Command{Revision: 1, RevisionDigest: "x", Action: ActionComment}, time.Time{})
	var rm *RevisionMismatchError
	if !errors.Is(err, ErrRevisionMismatch) || !errors.As(err, &rm) || rm.Revision != 1 || rm.Digest != digest {
		t.Fatalf("%#v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "revision 1 ") || !strings.Contains(msg, digest) {
		t.Fatalf("the message does not name the current revision: %s", msg)
	}
}
