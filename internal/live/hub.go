package live

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
)

// Bounds on waiting readers (held requests and open streams together).
const (
	// DefaultPerParticipant is how many readers one participant may keep
	// waiting at once on one replica.
	DefaultPerParticipant = 4
	// DefaultPerReplica is how many readers one replica keeps waiting.
	DefaultPerReplica = 4000
)

// ErrBusy: the participant or the replica already has as many waiting
// readers as the hub admits. The caller should try again later.
var ErrBusy = errors.New("live: too many waiting requests")

// Hub is one replica's set of waiting readers. The zero value is not
// usable; call New.
type Hub struct {
	perParticipant, perReplica int

	mu       sync.Mutex
	rooms    map[uuid.UUID]map[*Waiter]struct{}
	byPerson map[uuid.UUID]int
	total    int
	closed   chan struct{}
	closing  bool
	// changed, when set, hears of every change to a room with readers
	// (see OnRoomChanged).
	changed func(agreementID uuid.UUID)

	// seq counts the changes heard (RoomChanged, RoomsResumed), written
	// under mu; changedAt holds the count at the last change of each room
	// changed since the count stood at forgotten; a room not in it last
	// changed then or before (ChangedSince).
	seq       atomic.Uint64
	forgotten uint64
	changedAt map[uuid.UUID]uint64
}

// rememberedRooms bounds changedAt: past it, what it holds is forgotten,
// and a reader that marked before then checks its room again.
const rememberedRooms = 4096

// New returns a hub admitting perParticipant readers per participant and
// perReplica in all; zero or less means the defaults.
func New(perParticipant, perReplica int) *Hub {
	if perParticipant <= 0 {
		perParticipant = DefaultPerParticipant
	}
	if perReplica <= 0 {
		perReplica = DefaultPerReplica
	}
	return &Hub{perParticipant: perParticipant, perReplica: perReplica,
		rooms: map[uuid.UUID]map[*Waiter]struct{}{}, byPerson: map[uuid.UUID]int{}, closed: make(chan struct{}),
		changedAt: map[uuid.UUID]uint64{}}
}

// Mark is where the hub's count of changes stands. Take it before reading
// a room's state, and after joining ask ChangedSince: a change committed
// after the read is then either heard by ChangedSince or signalled to the
// waiter.
func (h *Hub) Mark() uint64 { return h.seq.Load() }

// ChangedSince reports whether a change to agreementID may have been heard
// since mark was taken: true when one was, or when the hub no longer
// knows (it forgot, or rooms resumed after changes went unannounced).
func (h *Hub) ChangedSince(agreementID uuid.UUID, mark uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.forgotten > mark || h.changedAt[agreementID] > mark
}

// heardLocked counts a change to agreementID (uuid.Nil: to every room).
func (h *Hub) heardLocked(agreementID uuid.UUID) {
	seq := h.seq.Add(1)
	if agreementID == uuid.Nil || len(h.changedAt) >= rememberedRooms {
		// Forgotten: a mark taken before this change cannot tell.
		h.forgotten = seq
		clear(h.changedAt)
		return
	}
	h.changedAt[agreementID] = seq
}

// Waiter is one waiting reader of one agreement. Its channel holds at most
// one pending signal, so a change that arrives while the reader is busy is
// not lost: the reader finds it on its next wait.
type Waiter struct {
	hub         *Hub
	agreement   uuid.UUID
	participant uuid.UUID
	c           chan struct{}
	once        sync.Once
}

// Join admits a reader of agreementID for participantID, or answers ErrBusy.
// Join before reading the state to wait on: a change committed after the
// read is then signalled. Call Leave when done.
func (h *Hub) Join(agreementID, participantID uuid.UUID) (*Waiter, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.total >= h.perReplica || h.byPerson[participantID] >= h.perParticipant {
		return nil, ErrBusy
	}
	w := &Waiter{hub: h, agreement: agreementID, participant: participantID, c: make(chan struct{}, 1)}
	set := h.rooms[agreementID]
	if set == nil {
		set = map[*Waiter]struct{}{}
		h.rooms[agreementID] = set
	}
	set[w] = struct{}{}
	h.byPerson[participantID]++
	h.total++
	return w, nil
}

// Changed is signalled when the agreement may have changed since the
// reader last looked.
func (w *Waiter) Changed() <-chan struct{} { return w.c }

// Closing is closed when the hub shuts down: the reader should answer
// now.
func (w *Waiter) Closing() <-chan struct{} { return w.hub.closed }

// Leave removes the reader; calling it again does nothing.
func (w *Waiter) Leave() {
	w.once.Do(func() {
		h := w.hub
		h.mu.Lock()
		defer h.mu.Unlock()
		if set := h.rooms[w.agreement]; set != nil {
			delete(set, w)
			if len(set) == 0 {
				delete(h.rooms, w.agreement)
			}
		}
		if h.byPerson[w.participant]--; h.byPerson[w.participant] <= 0 {
			delete(h.byPerson, w.participant)
		}
		h.total--
	})
}

func (w *Waiter) signal() {
	select {
	case w.c <- struct{}{}:
	default: // a signal is already pending
	}
}

// RoomChanged wakes the readers of agreementID, and tells the OnRoomChanged
// function when there were any.
func (h *Hub) RoomChanged(agreementID uuid.UUID) {
	h.mu.Lock()
	h.heardLocked(agreementID)
	set := h.rooms[agreementID]
	for w := range set {
		w.signal()
	}
	readers, changed := len(set), h.changed
	h.mu.Unlock()
	if readers > 0 && changed != nil {
		changed(agreementID)
	}
}

// OnRoomChanged sets f to hear, after its readers were woken, of every
// change to a room that has readers on this replica (nil: none). f runs on
// the caller of RoomChanged, which must not wait: it should return at once.
// It lets the woken readers' shared work (reading the room once) start
// while each checks its own credential.
func (h *Hub) OnRoomChanged(f func(agreementID uuid.UUID)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changed = f
}

// RoomsResumed wakes every reader: changes may have gone unannounced.
func (h *Hub) RoomsResumed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.heardLocked(uuid.Nil)
	for _, set := range h.rooms {
		for w := range set {
			w.signal()
		}
	}
}

// Shutdown tells every reader, present and future, to answer now.
func (h *Hub) Shutdown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closing {
		h.closing = true
		close(h.closed)
	}
}

// Waiting is the number of readers waiting now.
func (h *Hub) Waiting() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total
}

// Bounds returns the per-participant and per-replica bounds.
func (h *Hub) Bounds() (perParticipant, perReplica int) { return h.perParticipant, h.perReplica }
