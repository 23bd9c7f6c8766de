package httpapi

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/venue"
)

// roomRefresher reads a changed room once for all the readers the change
// woke (venue.RefreshRoom), while each of them checks its credential: the
// room's read and the credential checks overlap instead of following each
// other. At most one read per room runs at a time; changes that arrive
// meanwhile ask for one more read after it.
type roomRefresher struct {
	venue   *venue.Venue
	timeout time.Duration

	mu    sync.Mutex
	again map[uuid.UUID]bool // present: a read runs; true: read once more after it
}

func newRoomRefresher(v *venue.Venue, timeout time.Duration) *roomRefresher {
	return &roomRefresher{venue: v, timeout: timeout, again: map[uuid.UUID]bool{}}
}

// changed is the hub's OnRoomChanged: it returns at once.
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
		ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
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
