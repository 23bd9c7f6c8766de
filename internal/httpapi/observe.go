package httpapi

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
)

// RequestObserver hears about every API request, for metrics; ops.Metrics
// is one. route is the chi route pattern, never the raw path (which
// carries ids), or "unmatched".
type RequestObserver interface {
	// RequestStarted: a request arrived.
	RequestStarted()
	// RequestDone: its answer was written, with this status, d after it
	// arrived.
	RequestDone(route, method string, status int, d time.Duration)
}

// observeRequests tells the observer about each request once its answer
// is complete; without an observer it is not installed.
func observeRequests(o RequestObserver) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if o == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			o.RequestStarted()
			rec := &statusRecorder{ResponseWriter: w}
			status := http.StatusInternalServerError // unless the handler answers
			defer func() {
				if rec.status != 0 {
					status = rec.status
				}
				o.RequestDone(routePattern(r), r.Method, status, time.Since(start))
			}()
			next.ServeHTTP(rec, r)
			if rec.status == 0 {
				rec.status = http.StatusOK
			}
		})
	}
}

// routePattern is the pattern chi matched, or "unmatched".
func routePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		return rc.RoutePattern()
	}
	return "unmatched"
}
