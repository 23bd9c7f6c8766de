package venue

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/room"
)

// A post whose caller's deadline passes while its batch is deciding
// answers at the deadline; the decision, still running on the batch's
// worker, must share nothing with the caller that returned (go test -race
// checks it).
func TestPostEventAnswersAtItsDeadlineWhileDecideRuns(t *testing.T) {
	r := newTestRoom(t, 1)
	r.comment(t, 0, "first-post") // the agreement is known: later posts join batches
	var slow atomic.Bool
	r.v.Now = func() time.Time {
		if slow.CompareAndSwap(true, false) {
			time.Sleep(400 * time.Millisecond) // decide reads the clock: it outlives its caller
		}
		return time.Now()
	}
	slow.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	action, body, rev := "comment", "late", 1
	posted, created, err := r.v.PostEventAs(ctx, r.creds[0], "late-post", nil, EventInput{Action: &action, Body: &body, Revision: &rev, Digest: &r.digest})
	if !errors.Is(err, room.ErrUnavailable) || posted != nil || created {
		t.Fatalf("a post past its deadline: %v, %v, %v; want room.ErrUnavailable", posted, created, err)
	}
	time.Sleep(600 * time.Millisecond) // the decision ends on the worker
	r.comment(t, 0, "after-post")
}
