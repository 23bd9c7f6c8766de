package roomnotify

import (
	"slices"
	"testing"

	"github.com/google/uuid"
)

// TestNotifyPayloads: many ids split into payloads PostgreSQL accepts, and
// the listener reads back exactly the ids sent.
func TestNotifyPayloads(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 2, 213, 214, 1000} {
		ids := make([]uuid.UUID, n)
		for i := range ids {
			ids[i] = uuid.New()
		}
		var back []uuid.UUID
		for _, p := range notifyPayloads(ids) {
			if len(p) > notifyPayloadMax || len(p) == 0 {
				t.Fatalf("%d ids: a payload of %d bytes", n, len(p))
			}
			back = append(back, parsePayload(p)...)
		}
		if !slices.Equal(back, ids) {
			t.Fatalf("%d ids: read back %d", n, len(back))
		}
	}
	if got := parsePayload("not-an-id," + uuid.Nil.String()); len(got) != 1 {
		t.Fatalf("a malformed id is skipped, the rest kept: %v", got)
	}
}
