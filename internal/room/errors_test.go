package room

import (
	"errors"
	"fmt"
	"testing"
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
