package live

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
)

// DefaultWorkspaceWaiters is how many readers of workspaces one replica
// keeps waiting (the operators' consoles: people, not agents), and
// DefaultPerOperator how many of them one operator may hold (a few open
// tabs, each a list or an agreement's page).
const (
	DefaultWorkspaceWaiters = 1000
	DefaultPerOperator      = 8
)

// ownersCached bounds the agreement-to-workspace cache; past it the cache
// starts again empty (an agreement never changes workspace, so a cached
// owner is never stale, only forgotten).
const ownersCached = 100_000

// Resolver names the workspace of each agreement id it knows; ids it does
// not know (deleted, or not yet visible) are left out.
type Resolver func(ctx context.Context, agreementIDs []uuid.UUID) (map[uuid.UUID]uuid.UUID, error)

// Workspaces is one replica's set of readers waiting for any change in a
// workspace: an agreement created, amended or settled, an event appended, a
// participant claimed or revoked. It hears the same room notifications as
// a Hub (pass both to roomnotify.Listen through Listeners) and turns each
// agreement id into its workspace with a cache and, for ids it has not
// seen, one batched Resolver call. While no reader waits it does nothing
// at all. The zero value is not usable; call NewWorkspaces.
type Workspaces struct {
	resolve Resolver
	max     int

	mu      sync.Mutex
	waiters map[uuid.UUID]map[*WorkspaceWaiter]struct{}
	byWho   map[uuid.UUID]int
	total   int
	owners  map[uuid.UUID]uuid.UUID
	pending map[uuid.UUID]struct{}
	kick    chan struct{}
	closed  chan struct{}
	closing bool
}

// NewWorkspaces returns a set admitting max readers (zero or less: the
// default) that resolves agreement ids with resolve. Run must run for
// changes announced by agreement id alone to be resolved.
func NewWorkspaces(max int, resolve Resolver) *Workspaces {
	if max <= 0 {
		max = DefaultWorkspaceWaiters
	}
	return &Workspaces{resolve: resolve, max: max, waiters: map[uuid.UUID]map[*WorkspaceWaiter]struct{}{}, byWho: map[uuid.UUID]int{},
		owners: map[uuid.UUID]uuid.UUID{}, pending: map[uuid.UUID]struct{}{}, kick: make(chan struct{}, 1), closed: make(chan struct{})}
}

// WorkspaceWaiter is one waiting reader of one workspace. Like a Waiter,
// its channel holds one pending signal, so no change is lost between two
// waits.
type WorkspaceWaiter struct {
	set       *Workspaces
	workspace uuid.UUID
	who       uuid.UUID
	c         chan struct{}
	once      sync.Once
}

// Join admits a reader of workspaceID for the operator who, or answers
// ErrBusy. Join before reading the state to wait on; call Leave when done.
func (s *Workspaces) Join(workspaceID, who uuid.UUID) (*WorkspaceWaiter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.total >= s.max || s.byWho[who] >= DefaultPerOperator {
		return nil, ErrBusy
	}
	s.byWho[who]++
	w := &WorkspaceWaiter{set: s, workspace: workspaceID, who: who, c: make(chan struct{}, 1)}
	m := s.waiters[workspaceID]
	if m == nil {
		m = map[*WorkspaceWaiter]struct{}{}
		s.waiters[workspaceID] = m
	}
	m[w] = struct{}{}
	s.total++
	return w, nil
}

// Changed is signalled when the workspace may have changed since the
// reader last looked.
func (w *WorkspaceWaiter) Changed() <-chan struct{} { return w.c }

// Closing is closed when the replica shuts down: the reader should answer
// now.
func (w *WorkspaceWaiter) Closing() <-chan struct{} { return w.set.closed }

// Leave removes the reader; calling it again does nothing.
func (w *WorkspaceWaiter) Leave() {
	w.once.Do(func() {
		s := w.set
		s.mu.Lock()
		defer s.mu.Unlock()
		if m := s.waiters[w.workspace]; m != nil {
			delete(m, w)
			if len(m) == 0 {
				delete(s.waiters, w.workspace)
			}
		}
		if s.byWho[w.who]--; s.byWho[w.who] <= 0 {
			delete(s.byWho, w.who)
		}
		s.total--
	})
}

func (w *WorkspaceWaiter) signal() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

func (s *Workspaces) wakeLocked(workspaceID uuid.UUID) {
	for w := range s.waiters[workspaceID] {
		w.signal()
	}
}

// WorkspaceChanged wakes the readers of workspaceID.
func (s *Workspaces) WorkspaceChanged(workspaceID uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wakeLocked(workspaceID)
}

// RoomChanged wakes the readers of the agreement's workspace: at once when
// its workspace is known, else once Run has resolved it. It never blocks.
func (s *Workspaces) RoomChanged(agreementID uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.total == 0 {
		return // nobody waits: nothing to resolve either
	}
	if ws, ok := s.owners[agreementID]; ok {
		s.wakeLocked(ws)
		return
	}
	s.pending[agreementID] = struct{}{}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// RoomsResumed wakes every reader: changes may have gone unannounced.
func (s *Workspaces) RoomsResumed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.waiters {
		for w := range m {
			w.signal()
		}
	}
}

// Run resolves the workspaces of announced agreements until ctx ends, one
// batch per round. A batch that fails wakes every reader instead (each
// checks again for itself), so a failure delays nobody.
func (s *Workspaces) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
		s.mu.Lock()
		ids := make([]uuid.UUID, 0, len(s.pending))
		for id := range s.pending {
			ids = append(ids, id)
		}
		clear(s.pending)
		s.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		owners, err := s.resolve(rctx, ids)
		cancel()
		if err != nil {
			s.RoomsResumed()
			continue
		}
		s.mu.Lock()
		if len(s.owners)+len(owners) > ownersCached {
			clear(s.owners)
		}
		for id, ws := range owners {
			s.owners[id] = ws
			s.wakeLocked(ws)
		}
		s.mu.Unlock()
	}
}

// Shutdown tells every reader, present and future, to answer now.
func (s *Workspaces) Shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closing {
		s.closing = true
		close(s.closed)
	}
}

// Waiting is the number of readers waiting now.
func (s *Workspaces) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Listeners hands every room notification to each of its members, in
// order: a replica's Hub and Workspaces hear the same announcements.
type Listeners []interface {
	RoomChanged(agreementID uuid.UUID)
	RoomsResumed()
}

// RoomChanged tells each member.
func (l Listeners) RoomChanged(agreementID uuid.UUID) {
	for _, m := range l {
		m.RoomChanged(agreementID)
	}
}

// WorkspaceChanged tells each member that hears of workspaces.
func (l Listeners) WorkspaceChanged(workspaceID uuid.UUID) {
	for _, m := range l {
		if w, ok := m.(interface{ WorkspaceChanged(uuid.UUID) }); ok {
			w.WorkspaceChanged(workspaceID)
		}
	}
}

// RoomsResumed tells each member.
func (l Listeners) RoomsResumed() {
	for _, m := range l {
		m.RoomsResumed()
	}
}
