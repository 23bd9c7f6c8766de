package venue

import (
	"context"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/room"
)

// RoomChanged reads a room the cache holds into it again, without any
// reader asking: the readers a change wakes then find the new version.
func TestRoomChangedRefreshesTheCachedRoom(t *testing.T) {
	t.Parallel()
	r := newTestRoom(t, 2)
	ctx := context.Background()
	p, err := r.v.AuthParticipant(ctx, room.KindAgent, r.invs[0], r.tokens[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.v.RoomParts(ctx, p); err != nil { // the cache now holds the room
		t.Fatal(err)
	}
	cached := func() int64 {
		c := r.v.rooms()
		c.mu.Lock()
		defer c.mu.Unlock()
		if e, ok := c.rooms[p.AgreementID]; ok && e.snap != nil {
			return e.snap.agreement.Version
		}
		return -1
	}
	before := cached()
	if before < 0 {
		t.Fatal("the room read left nothing in the cache")
	}
	r.comment(t, 1, "refresh-0001")
	if got := cached(); got != before {
		t.Fatalf("the cache moved to version %d before any change was told", got)
	}
	r.v.RoomChanged(p.AgreementID)
	for deadline := time.Now().Add(5 * time.Second); cached() <= before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the cache still holds version %d 5 s after RoomChanged", cached())
		}
	}
}
