package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

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

// A heldRead is a read that waits for its answer to change: joined to
// the signals that may announce a change, it asks check, before its first
// wait and after each wake-up, whether the answer changed.
type heldRead struct {
	wait time.Duration
	// on, and also when set, wake the wait; on's Closing ends it (the
	// server stops). holdRead leaves both.
	on, also signal
	// check reports whether the answer changed since the read it holds,
	// asked with what woke the wait; an error ends the wait and is the
	// answer.
	check func(ctx context.Context, by wake) (bool, error)
	// expires, when set, fires when the answer changes without a signal
	// (a room's deadline passing); nil never fires.
	expires func() <-chan time.Time
	// answer writes the answer once the wait is over, changed as check
	// last said.
	answer func(w http.ResponseWriter, r *http.Request, changed bool)
}

// signal is what a held read joins: the hub's waiter for a room, the
// workspace set's for a workspace.
type signal interface {
	Changed() <-chan struct{}
	Closing() <-chan struct{}
	Leave()
}

// wake is what a heldRead's check is asked after.
type wake int

const (
	wakeFirst  wake = iota // nothing yet: before the first wait
	wakeOn                 // on signalled
	wakeAlso               // also signalled
	wakeExpiry             // expires fired
)

// holdRead keeps a request for up to h.wait while h.check sees no change,
// then answers it with h.answer. An error from check is answered as a
// problem; a client gone, not at all. Over HTTP/1.1 the request waits
// outside net/http (detachHold), and holdRead returns before it is
// answered.
func (s *Server) holdRead(w http.ResponseWriter, r *http.Request, h *heldRead) {
	run := func(w http.ResponseWriter, r *http.Request) {
		defer h.leave()
		changed, err := s.await(requestContext(r), h)
		if err != nil {
			s.handleHoldFailure(w, r, err)
			return
		}
		h.answer(w, r, changed)
	}
	if d := s.detachHold(w, r); d != nil {
		go func() {
			defer d.finish()
			run(d.w, d.r)
		}()
		return
	}
	holdDeadline(w, h.wait+holdSlack)
	run(w, r)
}

// leave leaves the signals h joined.
func (h *heldRead) leave() {
	h.on.Leave()
	if h.also != nil {
		h.also.Leave()
	}
}

// await waits, joined to h's signals, for up to h.wait until h.check sees
// a change: it reports whether one did, or the error that ended the wait
// (the context's when the client left).
func (s *Server) await(ctx context.Context, h *heldRead) (bool, error) {
	timeout := time.NewTimer(h.wait)
	defer timeout.Stop()
	var also <-chan struct{}
	if h.also != nil {
		also = h.also.Changed()
	}
	for by := wakeFirst; ; {
		if changed, err := h.check(ctx, by); err != nil || changed {
			return changed, err
		}
		var expires <-chan time.Time
		if h.expires != nil {
			expires = h.expires()
		}
		select {
		case <-h.on.Changed():
			by = wakeOn
		case <-also:
			by = wakeAlso
		case <-expires:
			by = wakeExpiry
		case <-timeout.C:
			return false, nil
		case <-h.on.Closing():
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// hold keeps a participant's request for up to wait while the reader's
// room tag is tag, then answers it with answer (holdRead). A credential
// that no longer holds is answered as a problem; the hub's bound answers
// 429.
func (s *Server) hold(w http.ResponseWriter, r *http.Request, wait time.Duration, tag venue.RoomTag, answer heldAnswer) {
	p := participantFrom(r.Context())
	if s.beforeJoin != nil {
		s.beforeJoin(p.AgreementID, s.hub)
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
	h := &heldRead{wait: wait, on: waiter}
	s.watchRoom(h, &p, tag, recheck, s.reauthenticate)
	h.answer = func(w http.ResponseWriter, r *http.Request, changed bool) { answer(w, r, p, changed) }
	s.holdRead(w, r, h)
}

// watchRoom makes h wait while the reader's room tag is tag: *p, the
// reader, is checked again (reauthenticate) after each wake-up, so that it
// is always the freshest principal, and compared then. A change committed
// between the first read and joining the hub is not signalled: with
// recheck h looks once more before waiting, as it would after a wake-up;
// without, the caller knows *p's state still holds. The room's deadline
// wakes h too.
func (s *Server) watchRoom(h *heldRead, p **venue.Principal, tag venue.RoomTag, recheck bool,
	reauthenticate func(context.Context, *venue.Principal) (*venue.Principal, error)) {
	h.check = func(ctx context.Context, by wake) (bool, error) {
		if by != wakeFirst || recheck {
			fresh, err := reauthenticate(ctx, *p)
			if err != nil {
				return false, err
			}
			*p = fresh
		}
		return s.venue.RoomTag(*p) != tag, nil
	}
	h.expires = func() <-chan time.Time { return s.deadlineTimer(*p) }
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
