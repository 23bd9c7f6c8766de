package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/live"
	"github.com/consensus-md/consensus/internal/venue"
)

// Live rooms: a held request or an open stream joins the
// replica's hub and then costs nothing until the hub says its agreement
// changed (on any replica: the store's listener hears every commit). Woken,
// it checks its credential again (a revocation ends it) and compares the
// room's tag for its reader with the one it waits on.

type unboundKey struct{}

// requestContext is the request's own context, without boundDatabase's
// deadline: a held request outlives that deadline on purpose.
func requestContext(r *http.Request) context.Context {
	if ctx, ok := r.Context().Value(unboundKey{}).(context.Context); ok {
		return ctx
	}
	return r.Context()
}

// freshDatabase bounds the database work a held request does once woken.
func (s *Server) freshDatabase(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(requestContext(r), s.dbTimeout)
}

// holdDeadline lets a response stay open for d past the server's read and
// write timeouts. The read deadline matters too: when it passes, net/http
// cancels the request's context.
func holdDeadline(w http.ResponseWriter, d time.Duration) {
	rc := http.NewResponseController(w)
	t := time.Now().Add(d)
	_ = rc.SetWriteDeadline(t)
	_ = rc.SetReadDeadline(t)
}

// holdSlack is the time a held response may still take to be written
// after its wait.
const holdSlack = 10 * time.Second

// join admits the request to the hub, or answers 429 and returns nil.
func (s *Server) join(w http.ResponseWriter, r *http.Request, p *venue.Principal) *live.Waiter {
	waiter, err := s.hub.Join(p.AgreementID, p.ParticipantID)
	if err != nil {
		w.Header().Del("Preference-Applied") // not held: no wait was applied
		s.writeProblem(w, r, err)
		return nil
	}
	return waiter
}

// reauthenticate checks p's credential again, for a woken reader, within
// the database bound: a revoked token is *venue.UnauthorizedError now. The
// principal it returns holds the room's state as of now.
func (s *Server) reauthenticate(ctx context.Context, p *venue.Principal) (*venue.Principal, error) {
	ctx, cancel := context.WithTimeout(ctx, s.dbTimeout)
	defer cancel()
	return s.venue.Recheck(ctx, p)
}

// heldAnswer writes a held request's answer once its wait is over: p is
// the freshest principal, changed whether the room changed for the reader.
type heldAnswer func(w http.ResponseWriter, r *http.Request, p *venue.Principal, changed bool)

// hold keeps a request for up to wait while the reader's room tag is tag,
// then answers it with answer. A credential that no longer holds or a
// failed database is answered as a problem; a client gone, not at all;
// the hub's bound answers 429. Over HTTP/1.1 the request waits outside
// net/http (detachHold), and hold returns before it is answered.
func (s *Server) hold(w http.ResponseWriter, r *http.Request, wait time.Duration, tag venue.RoomTag, answer heldAnswer) {
	p := participantFrom(r.Context())
	if h := beforeJoin.Load(); h != nil && h.agreementID == p.AgreementID {
		h.f(s.hub)
	}
	waiter := s.join(w, r, p)
	if waiter == nil {
		return
	}
	// The credential's lookup read the room's state: unless the hub heard
	// of a change to the room since just before it, that state still
	// holds, and a change from now on wakes the waiter.
	recheck := true
	if i := infoFrom(r.Context()); i != nil && i.marked {
		recheck = s.hub.ChangedSince(p.AgreementID, i.hubMark)
	}
	run := func(w http.ResponseWriter, r *http.Request) {
		defer waiter.Leave()
		ctx := requestContext(r)
		p, changed, err := s.awaitChange(ctx, waiter, p, wait, tag, recheck, func(p *venue.Principal) (*venue.Principal, error) { return s.reauthenticate(ctx, p) })
		if err != nil {
			s.handleHoldFailure(w, r, err)
			return
		}
		answer(w, r, p, changed)
	}
	if d := s.detachHold(w, r); d != nil {
		go func() {
			defer d.finish()
			run(d.w, d.r)
		}()
		return
	}
	holdDeadline(w, wait+holdSlack)
	run(w, r)
}

// beforeJoin, set by tests only, runs in hold before a held read of its
// agreement joins the hub.
var beforeJoin atomic.Pointer[joinHook]

type joinHook struct {
	agreementID uuid.UUID
	f           func(*live.Hub)
}

// awaitChange waits, joined to the hub as waiter, for up to wait while the
// reader's room tag is tag, checking the credential again (reauthenticate)
// before each comparison. A change committed between the first read and
// joining the hub is not signalled: with recheck it looks once more now
// that it would be; without, the caller knows p's state still holds and
// only the room's deadline is looked at. It returns as hold does.
func (s *Server) awaitChange(ctx context.Context, waiter *live.Waiter, p *venue.Principal, wait time.Duration, tag venue.RoomTag,
	recheck bool, reauthenticate func(*venue.Principal) (*venue.Principal, error)) (*venue.Principal, bool, error) {
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for {
		if recheck {
			var err error
			if p, err = reauthenticate(p); err != nil {
				return nil, false, err
			}
		}
		recheck = true
		if s.venue.RoomTag(p) != tag {
			return p, true, nil
		}
		select {
		case <-waiter.Changed():
		case <-s.deadlineTimer(p):
		case <-timeout.C:
			return p, false, nil
		case <-waiter.Closing():
			return p, false, nil
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// deadlineTimer fires when p's pending room passes its deadline (its
// outcome then reads expired, with no write to announce it); nil, which
// never fires, otherwise.
func (s *Server) deadlineTimer(p *venue.Principal) <-chan time.Time {
	left := s.venue.UntilDeadline(p)
	if left <= 0 {
		return nil
	}
	return time.After(left + 10*time.Millisecond)
}

// preferWait reads Prefer: wait and, when present, says so in
// Preference-Applied (with the wait as capped).
func preferWait(w http.ResponseWriter, r *http.Request) time.Duration {
	wait, ok := live.PreferWait(r.Header.Values("Prefer"))
	if ok {
		w.Header().Set("Preference-Applied", "wait="+strconv.Itoa(int(wait/time.Second)))
		w.Header().Add("Vary", "Prefer")
	}
	return wait
}

// handleHoldFailure answers what ended a hold as an error: a problem, or
// when the client left, only the status that says so (for the request log
// and the metrics; nobody reads it).
func (s *Server) handleHoldFailure(w http.ResponseWriter, r *http.Request, err error) {
	if requestContext(r).Err() != nil {
		w.WriteHeader(StatusClientClosed)
		return
	}
	s.writeProblem(w, r, err)
}
