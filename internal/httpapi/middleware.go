package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/consensus-md/consensus/internal/parked"
)

type ctxKey int

// statusRecorder is front's view of the answer: its status and size, and
// the gathering of its writes. An answer that states its Content-Length is
// whole before it is written, so its writes on a plain TCP connection are
// gathered (parked.GatherConn) from its head until the handler returns or flushes:
// net/http's flush of its 4 KiB buffer then leaves with the rest of the
// body in one writev. An answer without a stated length (a stream) is
// never held back.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
	conn   *parked.GatherConn // the request's connection, when it can gather
	// gathering is set once this answer starts gathering on conn: only then
	// does it touch conn, which a hijacked request no longer owns.
	gathering bool
}

// WriteHeader records the answer's status, the first one of 200 or more:
// a 1xx is informational and leaves at once, and the answer comes after.
func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 && code >= http.StatusOK {
		r.status = code
		r.gatherStated()
	}
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (deadlines of
// streams, the hijack of held requests).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
		r.gatherStated()
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += n
	return n, err
}

// gatherStated starts gathering when the answer, about to be written,
// states its length.
func (r *statusRecorder) gatherStated() {
	if r.conn == nil {
		return
	}
	if _, stated := r.ResponseWriter.Header()["Content-Length"]; stated {
		r.conn.Gather()
		r.gathering = true
	}
}

// FlushError flushes through net/http and sends what was gathered: a flush
// means the client should have it now (http.ResponseController calls it).
func (r *statusRecorder) FlushError() error {
	var err error
	if f, ok := r.ResponseWriter.(interface{ FlushError() error }); ok {
		err = f.FlushError()
	} else {
		err = http.NewResponseController(r.ResponseWriter).Flush()
	}
	if rerr := r.release(); err == nil {
		err = rerr
	}
	return err
}

// release ends this answer's gathering and sends what it kept; front calls
// it when the handler returns.
func (r *statusRecorder) release() error {
	if !r.gathering {
		return nil
	}
	r.gathering = false
	return r.conn.Release()
}

func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				// The writer logs it, as every 500, under the request id.
				s.writeProblem(w, r, fmt.Errorf("panic: %v", v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// queryCredentials are the names a credential could travel under.
var queryCredentials = []string{"secret", "token", "sessionToken", "participantToken", "emailProof"}

// refuseQueryCredentials answers 400 to any request with a credential in
// its query string, before routing; the value is never read further.
func (s *Server) refuseQueryCredentials(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if queryHasCredential(r.URL.RawQuery) {
			s.writeProblem(w, r, &Error{Code: ProblemCredentialInQuery, Detail: "credentials are accepted only in the Authorization header or the JSON body; treat this one as exposed"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// queryHasCredential reports whether a raw query names a credential, in any
// case or Unicode folding ("Secret", "ſecret", "TOKEN"). It reads every
// name itself rather than through url.ParseQuery, which drops a pair it
// cannot parse ("a=1;secret=x", "%zz"): a credential must not slip through
// next to a malformed neighbour.
func queryHasCredential(raw string) bool {
	for raw != "" {
		var pair string
		if i := strings.IndexAny(raw, "&;"); i >= 0 {
			pair, raw = raw[:i], raw[i+1:]
		} else {
			pair, raw = raw, ""
		}
		name, _, _ := strings.Cut(pair, "=")
		if un, err := url.QueryUnescape(name); err == nil {
			name = un
		}
		name = strings.TrimSpace(name)
		for _, c := range queryCredentials {
			if strings.EqualFold(name, c) {
				return true
			}
		}
	}
	return false
}

// singleHeaders are the request headers that may appear once: a second
// Authorization, Idempotency-Key or Consensus-Signature would leave it to
// chance which one a reader takes (Go's Header.Get takes the first).
var singleHeaders = []string{"Authorization", "Idempotency-Key", "Consensus-Signature"}

// refuseRepeatedHeaders answers 400 to a request carrying one of
// singleHeaders more than once, in any spelling of its name (the server
// canonicalizes names, so "authorization" and "AUTHORIZATION" count
// together), before anything reads it.
func (s *Server) refuseRepeatedHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, name := range singleHeaders {
			if len(r.Header.Values(name)) > 1 {
				s.writeProblem(w, r, invalidField(name, "header must be sent once"))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// boundDatabase gives the request a deadline of the database timeout, so
// waiting for a pooled connection, connecting and every statement end by
// then: a database that is down, unreachable or frozen answers 503
// unavailable (the store reports room.ErrUnavailable) instead of holding
// the client for as long as the outage lasts.
func (s *Server) boundDatabase(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := s.bound(r.Context())
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// bound is base with the database timeout as its deadline. A held request
// or stream outlives the bound on purpose: it finds base, unbounded, under
// unboundKey (live.go).
func (s *Server) bound(base context.Context) (context.Context, context.CancelFunc) {
	return s.deadline(context.WithValue(base, unboundKey{}, base))
}

// deadline bounds the database work done under ctx by the database
// timeout. It keeps ctx's values but not its cancellation: a client that
// leaves does not cut a statement short (pgx closes a connection whose
// statement is cancelled, and the pool would open another), and the work
// is bounded by the timeout all the same. With no cancellation to follow,
// its contexts register with no parent of the request's.
//
// While the breaker reports the database not answering, the deadline has
// already passed: the request's database work fails at once and it
// answers 503 unavailable with Retry-After. Work that runs out of its time
// tells the breaker, which then checks whether the database answers at
// all; work already waiting when the breaker opens stops too.
func (s *Server) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx = context.WithoutCancel(ctx)
	if s.breaker == nil {
		return context.WithTimeout(ctx, s.dbTimeout)
	}
	if s.breaker.Refusing() {
		return context.WithDeadline(ctx, time.Time{})
	}
	ctx, abandon := context.WithCancelCause(ctx)
	ctx, cancel := context.WithTimeout(ctx, s.dbTimeout)
	stop := context.AfterFunc(s.breaker.Tripped(), func() { abandon(errDatabaseNotAnswering) })
	return ctx, func() {
		stop()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			s.breaker.Suspect()
		}
		cancel()
		abandon(nil)
	}
}

// errDatabaseNotAnswering ends the requests waiting for a database the
// breaker found not answering: an outage, not a client that went away.
var errDatabaseNotAnswering = errors.New("the database does not answer")

// afterBody bounds the database work a handler does once it has read the
// request body. boundDatabase's deadline started with the request, and a
// body may take up to the server's read timeout to arrive: a slow but
// legal upload must not leave its database work no time (and answer 503).
func (s *Server) afterBody(r *http.Request) (context.Context, context.CancelFunc) {
	return s.deadline(r.Context())
}

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// noStore marks a private response.
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}
