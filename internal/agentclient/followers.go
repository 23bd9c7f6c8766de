package agentclient

import (
	"context"
	"log/slog"
	"sync"
)

// followers follow each pending room Watch knows (Client.Follow) and kick
// its loop whenever one may have changed.
type followers struct {
	a    *Agent
	ctx  context.Context
	kick chan<- struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	running map[string]context.CancelFunc
}

func (a *Agent) newFollowers(ctx context.Context, kick chan<- struct{}) *followers {
	return &followers{a: a, ctx: ctx, kick: kick, running: map[string]context.CancelFunc{}}
}

// follow starts following rec's room unless it is followed already.
func (f *followers) follow(rec *Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.running[rec.InvitationID]; ok {
		return
	}
	ctx, cancel := context.WithCancel(f.ctx)
	f.running[rec.InvitationID] = cancel
	roomURL, token, id := rec.Actions.Room, rec.ParticipantToken, rec.InvitationID
	f.wg.Go(func() {
		err := f.a.Client.Follow(ctx, roomURL, token, func() {
			select {
			case f.kick <- struct{}{}:
			default: // a kick is pending already
			}
		})
		if err != nil {
			f.a.Log.Warn("agent: no longer following the room", slog.String("invitation_id", id), slog.String("error", err.Error()))
		}
	})
}

// stop stops following a room (its outcome is final).
func (f *followers) stop(invitationID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cancel, ok := f.running[invitationID]; ok {
		cancel()
		f.running[invitationID] = func() {} // stays known: not followed again
	}
}

// stopAll ends every follower and waits for them.
func (f *followers) stopAll() {
	f.mu.Lock()
	for _, cancel := range f.running {
		cancel()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
