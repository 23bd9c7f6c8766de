package httpapi

import (
	"context"
	"net/http"

	"github.com/consensus-md/consensus/internal/venue"
)

// A route family serves the invitations of one participant kind: the agent
// API under agentroute.Pattern, the human API (the routes the invitation
// page calls) under agentroute.HumanPattern. Both run the same handlers and
// the same venue use cases; the family travels in the request context so
// that the venue can refuse an invitation of the other kind.

type familyKey struct{}

// family marks every request of a route group as belonging to the family
// of kind, bounds its database work (boundDatabase) and marks its answers
// private (noStore): three middlewares in one, so the request is copied
// once for its context instead of twice.
func (s *Server) family(kind string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "no-store")
			ctx, cancel := s.bound(context.WithValue(r.Context(), familyKey{}, kind))
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// familyFrom returns the family kind the route group set. A handler mounted
// outside a family is a programming error (see principal).
func familyFrom(ctx context.Context) string {
	return principal[string](ctx, familyKey{}, "familyFrom outside a route family")
}

// humanClaimInput is a person's claim body: the proof code alone. Any other
// member (an inbox, a runtime endpoint) is refused as unknown.
type humanClaimInput struct {
	EmailProof *string `json:"emailProof"`
}

// handleHumanClaim runs after requireSession, as handleClaim does.
func (s *Server) handleHumanClaim(w http.ResponseWriter, r *http.Request) {
	in, err := decodeBody[humanClaimInput](r, limitClaim)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	ctx, cancel := s.afterBody(r)
	defer cancel()
	out, err := s.venue.Claim(ctx, sessionFrom(r.Context()), venue.ClaimInput{EmailProof: in.EmailProof})
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
