package httpapi

import (
	"testing"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/venue"
)

// TestRoomHeadEncoding: the room's ETag is its tag's hex, quoted, and
// putUUID writes what uuid.UUID.String does.
func TestRoomHeadEncoding(t *testing.T) {
	t.Parallel()
	for range 100 {
		id := uuid.New()
		var b [36]byte
		if putUUID(b[:], id); string(b[:]) != id.String() {
			t.Fatalf("putUUID %s, String %s", b[:], id)
		}
	}
	tag := venue.RoomTag{0xab, 1}
	if got := roomETag(tag); got != `"ab010000000000000000000000000000"` {
		t.Fatalf("roomETag = %s", got)
	}
}
