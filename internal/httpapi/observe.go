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

// routePattern is the pattern chi matched, or "unmatched".
func routePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		if p := rc.RoutePattern(); p != "" {
			return p
		}
	}
	return "unmatched"
}
