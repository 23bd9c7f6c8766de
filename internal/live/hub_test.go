package live

import (
	"errors"
	"testing"

	"github.com/google/uuid"
)

func TestHubBoundsAndWakes(t *testing.T) {
	t.Parallel()
	h := New(2, 3)
	room, other := uuid.New(), uuid.New()
	alice, bob := uuid.New(), uuid.New()
	a1, err := h.Join(room, alice)
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := h.Join(room, alice)
	if _, err := h.Join(room, alice); !errors.Is(err, ErrBusy) {
		t.Fatalf("third reader of one participant: %v", err)
	}
	b1, _ := h.Join(other, bob)
	if _, err := h.Join(other, uuid.New()); !errors.Is(err, ErrBusy) {
		t.Fatalf("reader past the replica bound: %v", err)
	}

	h.RoomChanged(room)
	h.RoomChanged(room) // coalesces with the pending signal
	for _, w := range []*Waiter{a1, a2} {
		select {
		case <-w.Changed():
		default:
			t.Fatal("a reader of the changed room was not woken")
		}
	}
	select {
	case <-b1.Changed():
		t.Fatal("a reader of another room was woken")
	default:
	}
	h.RoomsResumed()
	select {
	case <-b1.Changed():
	default:
		t.Fatal("resuming did not wake every reader")
	}

	a1.Leave()
	a1.Leave() // twice is once
	if h.Waiting() != 2 {
		t.Fatalf("waiting = %d", h.Waiting())
	}
	if _, err := h.Join(room, alice); err != nil {
		t.Fatalf("a freed slot: %v", err)
	}
	h.Shutdown()
	h.Shutdown()
	select {
	case <-a2.Closing():
	default:
		t.Fatal("shutdown did not reach a reader")
	}
}

// TestHubTellsOfChangesToRoomsWithReaders: OnRoomChanged hears of a change
// to a room with readers, after they were woken, and of no other.
func TestHubTellsOfChangesToRoomsWithReaders(t *testing.T) {
	t.Parallel()
	h := New(0, 0)
	room, empty := uuid.New(), uuid.New()
	w, err := h.Join(room, uuid.New())
	if err != nil {
		t.Fatal(err)
	}
	var heard []uuid.UUID
	h.OnRoomChanged(func(id uuid.UUID) {
		select {
		case <-w.Changed():
		default:
			t.Error("told of the change before its reader was woken")
		}
		heard = append(heard, id)
	})
	h.RoomChanged(empty)
	h.RoomChanged(room)
	if len(heard) != 1 || heard[0] != room {
		t.Fatalf("heard %v, want only %v", heard, room)
	}
	w.Leave()
	h.RoomChanged(room)
	if len(heard) != 1 {
		t.Fatalf("told of a change to a room without readers: %v", heard)
	}
}

// ChangedSince tells a reader whether its room changed between its mark
// and now, and says yes whenever the hub cannot tell: after it forgot
// (past rememberedRooms rooms) and after rooms resumed.
func TestHubChangedSince(t *testing.T) {
	t.Parallel()
	h := New(0, 0)
	room, other := uuid.New(), uuid.New()
	mark := h.Mark()
	if h.ChangedSince(room, mark) {
		t.Fatal("a room nobody changed changed")
	}
	h.RoomChanged(room)
	if !h.ChangedSince(room, mark) || h.ChangedSince(other, mark) {
		t.Fatal("one room's change is not told apart from another's")
	}
	after := h.Mark()
	if h.ChangedSince(room, after) {
		t.Fatal("a change before the mark counts after it")
	}

	for range rememberedRooms {
		h.RoomChanged(uuid.New())
	}
	if !h.ChangedSince(other, after) {
		t.Fatal("past what the hub remembers, a room reads unchanged")
	}
	late := h.Mark()
	if h.ChangedSince(other, late) {
		t.Fatal("a mark taken after the hub forgot cannot tell")
	}

	h.RoomsResumed()
	if !h.ChangedSince(other, late) {
		t.Fatal("rooms resumed, and a room reads unchanged")
	}
	if h.ChangedSince(other, h.Mark()) {
		t.Fatal("a mark taken after rooms resumed cannot tell")
	}
}
