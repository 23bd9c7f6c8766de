package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/consensus-md/consensus/internal/parked"
)

// requestInfo is what the front middleware learns of a request, stored in
// its context as one value: the request id and the client's address.
type requestInfo struct {
	id     string
	client netip.Addr
	// route is the route pattern once routeOf has built it: the log line
	// and the metrics both need it, and chi joins it anew on each call.
	route string
	// authKey and auth are what the route's credential middleware
	// authenticated, under the key its reader asks for (principal): kept
	// here rather than in a context value, which would copy the request.
	authKey, auth any
	// hubMark is the live hub's Mark taken before the participant
	// credential's lookup (marked), for a held request (hold).
	hubMark uint64
	marked  bool

	// A handler whose work outlives ServeHTTP (a stream taken from
	// net/http) detaches the request: it stays in flight, and is observed
	// and logged, until that work ends (detachRequest).
	mu              sync.Mutex
	detached, ended bool
	lateStatus      int    // the status of an answer written past net/http, if any
	extraBytes      int    // written past net/http, counted in the log line
	finish          func() // what front left to do when the work ends
}

// detachRequest marks the request's work as outliving its handler. The
// returned function ends it, with the status of an answer written outside
// the ResponseWriter (0 when the ResponseWriter's stands) and the bytes
// written there; call it exactly once.
func detachRequest(ctx context.Context) func(status, written int) {
	i := infoFrom(ctx)
	if i == nil {
		return func(int, int) {}
	}
	i.mu.Lock()
	i.detached = true
	i.mu.Unlock()
	return func(status, written int) {
		i.mu.Lock()
		i.ended, i.lateStatus, i.extraBytes = true, status, written
		finish := i.finish
		i.mu.Unlock()
		if finish != nil {
			finish()
		}
	}
}

// statusOr is the status written past net/http, if any, else recorded.
// Call it once the request's work has ended.
func (i *requestInfo) statusOr(recorded int) int {
	if i.lateStatus != 0 {
		return i.lateStatus
	}
	return recorded
}

// routeOf is the request's route pattern (routePattern), built once.
func (i *requestInfo) routeOf(r *http.Request) string {
	if i.route == "" {
		i.route = routePattern(r)
	}
	return i.route
}

const requestInfoKey ctxKey = iota + 200

func infoFrom(ctx context.Context) *requestInfo {
	i, _ := ctx.Value(requestInfoKey).(*requestInfo)
	return i
}

// requestID is the request's id as front chose it; empty outside it.
func requestID(ctx context.Context) string {
	if i := infoFrom(ctx); i != nil {
		return i.id
	}
	return ""
}

// front is every request's first middleware, in one handler (the
// chain of one-line middlewares cost a copy of the request and a context
// value each, and two status recorders): it resolves the client's address
// (resolveClient), sets Strict-Transport-Security (hstsValue) and a fresh
// X-Request-Id (an id sent by the client is ignored: it could carry
// anything into the logs), logs and observes the answer, recovers a panic
// as a 500, refuses a credential in the query and a repeated single
// header, and sets the security headers of every answer, in that order.
func (s *Server) front(next http.Handler) http.Handler {
	checked := s.recoverPanics(s.refuseQueryCredentials(s.refuseRepeatedHeaders(securityHeaders(next))))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{id: newRequestID(), client: s.resolveClient(r)}
		hdr := w.Header()
		if s.hsts || r.TLS != nil {
			hdr.Set("Strict-Transport-Security", hstsValue)
		}
		hdr.Set("X-Request-Id", info.id)
		r = r.WithContext(context.WithValue(r.Context(), requestInfoKey, info))
		rec := &statusRecorder{ResponseWriter: w}
		rec.conn = parked.GatherFrom(r.Context())
		if s.requests != nil {
			s.requests.RequestStarted()
		}
		finished := false
		// finish observes and logs the answer. A detached request keeps it
		// until its work ends, so it holds the answer's figures, not the
		// request or its ResponseWriter (and through them net/http's
		// buffers of the connection).
		finish := func(ctx context.Context, method string, status, written int) {
			if status == 0 {
				status = http.StatusOK
			}
			if s.requests != nil {
				s.requests.RequestDone(info.route, method, status, time.Since(start))
			}
			s.logRequest(ctx, method, status, written, start, info)
		}
		defer func() {
			if !finished && s.requests != nil { // a handler that panicked past recoverPanics
				status := http.StatusInternalServerError
				if rec.status != 0 {
					status = rec.status
				}
				s.requests.RequestDone(info.routeOf(r), r.Method, status, time.Since(start))
			}
		}()
		checked.ServeHTTP(rec, r)
		_ = rec.release() // an error is net/http's to meet on its next write
		finished = true
		info.routeOf(r) // while chi still holds the route
		info.mu.Lock()
		if info.detached && !info.ended {
			ctx, method, status, written := r.Context(), r.Method, rec.status, rec.bytes
			info.finish = func() { finish(ctx, method, info.statusOr(status), written+info.extraBytes) }
			info.mu.Unlock()
			return
		}
		info.mu.Unlock()
		finish(r.Context(), r.Method, info.statusOr(rec.status), rec.bytes+info.extraBytes)
	})
	if len(s.trusted) > 0 {
		return middleware.ClientIPFromXFF(s.trusted...)(h)
	}
	return h
}

// newRequestID is 96 random bits in hex.
func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// logRequest writes one JSON line per request: method, route pattern (never
// the raw path or query), status, duration and request id. No header, body
// or query value is ever logged, so no credential can be.
func (s *Server) logRequest(ctx context.Context, method string, status, written int, start time.Time, info *requestInfo) {
	h := s.log.Handler()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	// The record is built here rather than through Logger.LogAttrs, which
	// also walks the stack for a source location nobody logs.
	line := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
	line.AddAttrs(
		slog.String("method", method), slog.String("route", info.route), slog.Int("status", status),
		slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000), slog.Int("bytes", written),
		slog.String("request_id", info.id), slog.String("client", info.client.String()))
	_ = h.Handle(ctx, line)
}
