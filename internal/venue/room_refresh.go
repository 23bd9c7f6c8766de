package venue

import (
	"context"
	"sync"

	"github.com/google/uuid"
)

// RoomChanged is for the live hub's OnRoomChanged: it returns at once, and
// reads the changed room into the cache (RefreshRoom) for all the readers
// the change woke, while each of them checks its credential.
func (v *Venue) RoomChanged(id uuid.UUID) {
	v.refreshOnce.Do(func() { v.refresher = &roomRefresher{venue: v, again: map[uuid.UUID]bool{}} })
	v.refresher.changed(id)
}

// roomRefresher reads a changed room once for all the readers the change
// woke (RefreshRoom), while each of them checks its credential: the
// room's read and the credential checks overlap instead of following each
// other. At most one read per room runs at a time; changes that arrive
// meanwhile ask for one more read after it.
type roomRefresher struct {
	venue *Venue

	mu    sync.Mutex
	again map[uuid.UUID]bool // present: a read runs; true: read once more after it
}

// changed starts a read of room id, or asks the running one to read once
// more after it ends; it returns at once.
func (r *roomRefresher) changed(id uuid.UUID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, running := r.again[id]; running {
		r.again[id] = true
		return
	}
	r.again[id] = false
	go r.run(id)
}

func (r *roomRefresher) run(id uuid.UUID) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), r.venue.Store.Timeout())
		_ = r.venue.RefreshRoom(ctx, id) // a failed read leaves it to the readers, who answer for it
		cancel()
		r.mu.Lock()
		if !r.again[id] {
			delete(r.again, id)
			r.mu.Unlock()
			return
		}
		r.again[id] = false
		r.mu.Unlock()
	}
}
