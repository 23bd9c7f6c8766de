package live

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
)

func signalled(c <-chan struct{}, within time.Duration) bool {
	if within == 0 {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	select {
	case <-c:
		return true
	case <-time.After(within):
		return false
	}
}

// TestWorkspacesWakeTheRightReaders: an announced agreement wakes the
// readers of its workspace only, resolved once and then from the cache;
// nothing is resolved while nobody waits; a failed resolution wakes
// everyone; the bound holds.
func TestWorkspacesWakeTheRightReaders(t *testing.T) {
	t.Parallel()
	wsA, wsB := uuid.New(), uuid.New()
	agA, agB, unknown := uuid.New(), uuid.New(), uuid.New()
	var calls atomic.Int32
	var fail atomic.Bool
	s := NewWorkspaces(2, func(_ context.Context, ids []uuid.UUID) (map[uuid.UUID]uuid.UUID, error) {
		calls.Add(1)
		if fail.Load() {
			return nil, errors.New("database down")
		}
		out := map[uuid.UUID]uuid.UUID{}
		for _, id := range ids {
			switch id {
			case agA:
				out[id] = wsA
			case agB:
				out[id] = wsB
			}
		}
		return out, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)

	s.RoomChanged(agA) // nobody waits: nothing to resolve
	time.Sleep(20 * time.Millisecond)
	if calls.Load() != 0 {
		t.Fatalf("resolved %d times with nobody waiting", calls.Load())
	}
	olga := uuid.New()
	for i := 0; i < DefaultPerOperator; i++ {
		w, err := NewWorkspaces(0, nil).Join(wsA, olga)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Leave()
	}
	many := NewWorkspaces(0, nil)
	for i := 0; i < DefaultPerOperator; i++ {
		_, _ = many.Join(wsA, olga)
	}
	if _, err := many.Join(wsB, olga); !errors.Is(err, ErrBusy) {
		t.Fatalf("one operator past its bound: %v", err)
	}
	a, _ := s.Join(wsA, olga)
	b, _ := s.Join(wsB, uuid.New())
	if _, err := s.Join(wsA, uuid.New()); !errors.Is(err, ErrBusy) {
		t.Fatalf("a third reader: %v", err)
	}
	s.RoomChanged(agA)
	if !signalled(a.Changed(), time.Second) || signalled(b.Changed(), 50*time.Millisecond) {
		t.Fatal("agreement A must wake workspace A's reader only")
	}
	s.RoomChanged(unknown)
	if signalled(a.Changed(), 50*time.Millisecond) || signalled(b.Changed(), 50*time.Millisecond) {
		t.Fatal("an unknown agreement woke a reader")
	}
	before := calls.Load()
	s.RoomChanged(agA) // cached: wakes at once, resolves nothing
	if !signalled(a.Changed(), 0) || calls.Load() != before {
		t.Fatalf("a cached agreement: resolved again (%d to %d) or did not wake at once", before, calls.Load())
	}
	s.WorkspaceChanged(wsB)
	if !signalled(b.Changed(), 0) || signalled(a.Changed(), 20*time.Millisecond) {
		t.Fatal("a workspace change must wake its own readers only")
	}
	fail.Store(true)
	s.RoomChanged(agB) // not cached yet: the failed lookup wakes everyone
	if !signalled(a.Changed(), time.Second) || !signalled(b.Changed(), time.Second) {
		t.Fatal("a failed resolution must wake every reader")
	}
	a.Leave()
	a.Leave()
	if s.Waiting() != 1 {
		t.Fatalf("waiting %d after one left twice", s.Waiting())
	}
	var l Listeners = Listeners{New(0, 0), s}
	l.WorkspaceChanged(wsB)
	if !signalled(b.Changed(), 0) {
		t.Fatal("Listeners did not pass on a workspace change")
	}
	s.Shutdown()
	if !signalled(b.Closing(), 0) {
		t.Fatal("Shutdown did not close")
	}
}
