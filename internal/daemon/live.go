package daemon

import (
	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/live"
	"github.com/consensus-md/consensus/internal/webhook/deliver"
)

// roomListeners hands every committed room change (roomnotify.Listen) to
// the replica's waiting readers and to its webhook workers, which a change
// may have given deliveries.
type roomListeners struct {
	hub   *live.Hub
	hooks *deliver.Worker
}

func (l roomListeners) RoomChanged(id uuid.UUID) {
	l.hub.RoomChanged(id)
	l.hooks.RoomChanged()
}

func (l roomListeners) RoomsResumed() {
	l.hub.RoomsResumed()
	l.hooks.RoomChanged()
}
