package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/consensus-md/consensus/internal/gather"
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
		rec.conn = gather.From(r.Context())
		if s.requests != nil {
			s.requests.RequestStarted()
		}
		finished := false
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
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		info.routeOf(r) // while chi still holds the route
		if s.requests != nil {
			s.requests.RequestDone(info.route, r.Method, status, time.Since(start))
		}
		s.logRequest(r.Context(), r.Method, status, rec.bytes, start, info)
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
