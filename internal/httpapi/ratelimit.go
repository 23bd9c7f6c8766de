package httpapi

import (
	"net/http"
	"time"

	"github.com/go-chi/httprate"
)

// rateLimiter is the configured limit: requests a minute per client
// address, for each limited route; 0 or less turns limiting off.
type rateLimiter struct {
	perMinute int
}

func newRateLimiter(perMinute int) *rateLimiter { return &rateLimiter{perMinute: perMinute} }

// limit wraps one route with its own per-client-address counter
// (go-chi/httprate, a sliding one-minute window). The address is the one
// front resolved (resolveClient), so behind trusted proxies each client counts
// for itself, and an IPv6 client for its whole /64. Counters live in this
// process: with N replicas behind a balancer, a client may reach up to N
// times the limit. A refusal is the rate-limited problem with Retry-After;
// no other rate-limit header is sent. Each call makes a separate counter;
// route also prefixes its keys.
func (s *Server) limit(route string) func(http.Handler) http.Handler {
	if s.limiter.perMinute <= 0 {
		return func(next http.Handler) http.Handler { return next }
	}
	return httprate.LimitBy(s.limiter.perMinute, time.Minute,
		func(r *http.Request) (string, error) {
			return route + " " + httprate.CanonicalizeIP(clientAddr(r.Context()).String()), nil
		},
		httprate.WithResponseHeaders(httprate.ResponseHeaders{RetryAfter: "Retry-After"}),
		httprate.WithLimitHandler(func(w http.ResponseWriter, r *http.Request) {
			s.writeProblem(w, r, &Error{Code: ProblemRateLimited, Detail: "too many requests from this address; wait and retry"})
		}))
}
