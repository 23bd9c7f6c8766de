package httpapi

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/consensus-md/consensus/internal/parked"
)

// parking is what this package asks of the connections kept outside
// net/http (internal/parked): the held requests' waits, and the listener's
// wiring into http.Server. Nil (no Listen, or CONSENSUS_PARKED_CONNECTIONS
// off) keeps every request in net/http: held reads and streams then wait
// in their handlers, as they do over HTTP/2.
type parking interface {
	// Hold takes a held request's connection, taken from net/http, for
	// its wait (parked.Listener.Hold).
	Hold(conn net.Conn, header http.Header, keepAlive bool, gone func()) *parked.Held
	ConnContext(ctx context.Context, c net.Conn) context.Context
	ConnState(c net.Conn, state http.ConnState)
	Admitted() int
	// Wait waits for the requests served off net/http (parked.Listener.Wait).
	Wait(ctx context.Context) error
}

// Listen wraps the listener the server will accept on (serve it with
// http.Server.Serve; for TLS, a tls.NewListener inside it), with
// internal/parked: through it a held request over HTTP/1.1 waits outside
// net/http, and its connection waits for the client's next request; idle
// is how long it may wait (the server's IdleTimeout). That request comes
// back to net/http, or, when it is another held read, is served off it:
// readHeader bounds the reading of its head there, as the server's
// ReadHeaderTimeout does in net/http (zero: 10 seconds). Set the
// http.Server's ConnContext and ConnState to s's. Call it once, before
// serving; without it every request stays in net/http.
func (s *Server) Listen(ln net.Listener, idle, readHeader time.Duration) net.Listener {
	l := parked.Listen(ln, parked.Options{Idle: idle, HeadWait: readHeader, Route: s.heldRoute, Log: s.log})
	s.parking = l
	return l
}

// ConnContext is the http.Server's ConnContext (Listen).
func (s *Server) ConnContext(ctx context.Context, c net.Conn) context.Context {
	if s.parking == nil {
		return ctx
	}
	return s.parking.ConnContext(ctx, c)
}

// ConnState is the http.Server's ConnState (Listen): it ends a new
// connection's admission.
func (s *Server) ConnState(c net.Conn, state http.ConnState) {
	if s.parking != nil {
		s.parking.ConnState(c, state)
	}
}

// Admitted is the number of connections in their first request now (0
// without Listen).
func (s *Server) Admitted() int {
	if s.parking == nil {
		return 0
	}
	return s.parking.Admitted()
}

// heldRoutes is what serving a parked connection's next request takes:
// the handler every request goes through, and the GET routes that hold
// (Route.Holds), which Handler builds.
type heldRoutes struct {
	handler http.Handler
	holds   *chi.Mux
}

var routeContexts = sync.Pool{New: func() any { return chi.NewRouteContext() }}

// heldRoute is the handler of a held read of path, or nil when path is
// not one (parked.Options.Route).
func (s *Server) heldRoute(path string) http.Handler {
	rt := s.reholding.Load()
	if rt == nil {
		return nil
	}
	rc := routeContexts.Get().(*chi.Context)
	defer routeContexts.Put(rc)
	rc.Reset()
	if !rt.holds.Match(rc, http.MethodGet, path) {
		return nil
	}
	return rt.handler
}

// detachedHold is a held request taken from net/http.
type detachedHold struct {
	held   *parked.Held
	w      http.ResponseWriter
	r      *http.Request // on a context of its own (detachedContext)
	cancel context.CancelFunc
	end    func(status, written int)
}

// detachHold takes r's connection from net/http, or returns nil when it
// cannot (no parking, HTTP/2, a method other than GET, no epoll set): the
// request then waits in its handler. On success the handler must return
// without writing to w, and the hold ends with finish.
func (s *Server) detachHold(w http.ResponseWriter, r *http.Request) *detachedHold {
	if s.parking == nil || r.ProtoMajor != 1 || r.ProtoMinor < 1 || r.Method != http.MethodGet || !parked.CanWatch() {
		return nil
	}
	header := w.Header().Clone() // what front and the handler set so far
	conn, brw, end, ok := s.takeConn(w, r)
	if !ok {
		return nil
	}
	ctx, cancel := detachedContext(r)
	held := s.parking.Hold(conn, header, !r.Close && brw.Reader.Buffered() == 0, cancel)
	return &detachedHold{held: held, w: held.Writer(), r: r.WithContext(ctx), cancel: cancel, end: end}
}

// finish ends the hold: its answer is sent and the connection parked, or,
// when the client left or nothing was answered, the connection closed.
func (d *detachedHold) finish() {
	defer d.cancel()
	if status, sent := d.held.Answered(); status == 0 || status == StatusClientClosed || (!sent && d.r.Context().Err() != nil) {
		d.held.Drop()
		d.end(StatusClientClosed, 0)
		return
	}
	d.end(d.held.Finish())
}

// takeConn takes r's connection from net/http (Hijack) for work that
// outlives the handler: the request stays in flight and logged until end,
// and WaitDetached waits for it. Call end once that work is over (detached
// counts it done); when ok is false nothing was taken and the handler
// answers through w as usual.
func (s *Server) takeConn(w http.ResponseWriter, r *http.Request) (conn net.Conn, brw *bufio.ReadWriter, end func(status, written int), ok bool) {
	ended := detachRequest(r.Context())
	// Counted before the connection leaves net/http: until then its
	// Shutdown waits for it, so WaitDetached cannot have begun.
	s.detached.Add(1)
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.detached.Done()
		ended(0, 0)
		return nil, nil, nil, false
	}
	return conn, brw, func(status, written int) {
		ended(status, written)
		s.detached.Done()
	}, true
}

// detachedContext is r's context without its end (net/http ends it when
// the handler returns), cancelled when the client leaves. It is also the
// unbounded context (requestContext) of the returned request, and it
// keeps its own copy of chi's route context, which chi reuses.
func detachedContext(r *http.Request) (context.Context, context.CancelFunc) {
	base, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	ctx := context.WithValue(base, unboundKey{}, base)
	if rc := chi.RouteContext(r.Context()); rc != nil {
		cp := *rc
		cp.URLParams.Keys = slices.Clone(rc.URLParams.Keys)
		cp.URLParams.Values = slices.Clone(rc.URLParams.Values)
		cp.RoutePatterns = slices.Clone(rc.RoutePatterns)
		ctx = context.WithValue(ctx, chi.RouteCtxKey, &cp)
	}
	return ctx, cancel
}
