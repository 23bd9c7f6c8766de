package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/venue"
)

// Each route authenticates once, in the middleware of its credential (its
// row in routes.go), and hands its handlers the principal through the
// context; a handler never reads a credential.
// Middleware runs before the handler reads the body, which gives the
// documented order: credential first, then body.

type (
	sessionKey     struct{}
	participantKey struct{}
	credentialKey  struct{}
	operatorKey    struct{}
)

// operatorChallenge is the WWW-Authenticate answer of the operator API.
const operatorChallenge = `Bearer realm="consensus-operator"`

// credential returns the token of the Authorization header when it uses
// the given scheme (see parseAuthorization), or "".
func credential(r *http.Request, scheme string) string {
	got, token, ok := parseAuthorization(r.Header.Get("Authorization"))
	if !ok || !strings.EqualFold(got, scheme) {
		return ""
	}
	return token
}

// parseAuthorization splits "<scheme> <token68>" (RFC 9110 §11.4): a
// scheme of token characters, one or more spaces, then one credential of
// token68 characters and nothing else. Anything else (two credentials,
// parameters, non-ASCII bytes) is not a credential of any scheme; the
// route then answers as it does to a missing one.
func parseAuthorization(h string) (scheme, token string, ok bool) {
	scheme, rest, found := strings.Cut(h, " ")
	token = strings.TrimLeft(rest, " ")
	if !found || scheme == "" || token == "" {
		return "", "", false
	}
	for i := 0; i < len(scheme); i++ {
		if !isTokenChar(scheme[i]) {
			return "", "", false
		}
	}
	body := strings.TrimRight(token, "=")
	if body == "" {
		return "", "", false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			return "", "", false
		}
	}
	return scheme, token, true
}

// isTokenChar reports an RFC 9110 tchar.
func isTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// operatorFrom returns the call requireOperatorFor stored.
func operatorFrom(ctx context.Context) venue.OperatorCall {
	return principal[venue.OperatorCall](ctx, operatorKey{}, "operatorFrom without requireOperatorFor on the route")
}

// requireSession checks the Consensus-Session credential for the invitation
// in the path (the session, then the invitation: venue.AuthSession) and
// puts the grant in the context for sessionFrom.
func (s *Server) requireSession(next http.Handler) http.Handler {
	return authenticate(s, venue.SchemeSession, sessionKey{}, func(ctx context.Context, id, token string) (*venue.SessionGrant, error) {
		return s.venue.AuthSession(ctx, familyFrom(ctx), id, token)
	}, next)
}

// requireParticipant checks the Consensus-Participant credential for the
// invitation in the path and puts the principal in the context for
// participantFrom.
func (s *Server) requireParticipant(next http.Handler) http.Handler {
	return authenticate(s, venue.SchemeParticipant, participantKey{}, func(ctx context.Context, id, token string) (*venue.Principal, error) {
		if i := infoFrom(ctx); i != nil {
			i.hubMark, i.marked = s.hub.Mark(), true
		}
		return s.venue.AuthParticipant(ctx, familyFrom(ctx), id, token)
	}, next)
}

// participantCredential reads the Consensus-Participant token of a write
// route without checking it: the venue checks it in the transaction that
// writes, under the agreement's lock that revocation takes, which
// spares a lookup. A missing token answers 401 here, as requireParticipant
// would.
func (s *Server) participantCredential(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := credential(r, venue.SchemeParticipant)
		if token == "" {
			s.writeProblem(w, r, &venue.UnauthorizedError{Scheme: venue.SchemeParticipant})
			return
		}
		c := venue.NewParticipantCredential(familyFrom(r.Context()), chi.URLParam(r, agentroute.IDParam), token)
		next.ServeHTTP(w, withPrincipal(r, credentialKey{}, c))
	})
}

// withPrincipal is r carrying what its credential middleware authenticated
// under key, for principal to read: in the request's record when front
// made one, else in a context value.
func withPrincipal(r *http.Request, key, p any) *http.Request {
	if i := infoFrom(r.Context()); i != nil && i.authKey == nil {
		i.authKey, i.auth = key, p
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), key, p))
}

// authenticate is the middleware of one invitation credential: the token
// of the scheme, checked by check for the invitation in the path, and what
// check returns stored under key. A missing token is the same
// venue.UnauthorizedError a wrong one is, so the two answers match.
func authenticate[P any](s *Server, scheme string, key any, check func(ctx context.Context, invitationID, token string) (P, error), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := credential(r, scheme)
		if token == "" {
			s.writeProblem(w, r, &venue.UnauthorizedError{Scheme: scheme})
			return
		}
		p, err := check(r.Context(), chi.URLParam(r, agentroute.IDParam), token)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		next.ServeHTTP(w, withPrincipal(r, key, p))
	})
}

// sessionFrom returns the grant requireSession stored.
func sessionFrom(ctx context.Context) *venue.SessionGrant {
	return principal[*venue.SessionGrant](ctx, sessionKey{}, "sessionFrom without requireSession on the route")
}

// participantFrom returns the principal requireParticipant stored.
func participantFrom(ctx context.Context) *venue.Principal {
	return principal[*venue.Principal](ctx, participantKey{}, "participantFrom without requireParticipant on the route")
}

// credentialFrom returns the credential participantCredential stored.
func credentialFrom(ctx context.Context) venue.ParticipantCredential {
	return principal[venue.ParticipantCredential](ctx, credentialKey{}, "credentialFrom without participantCredential on the route")
}

// principal reads what an authentication middleware stored. A handler
// mounted without that middleware is a programming error: it panics, and
// the recoverer answers 500, rather than serving an unauthenticated request.
func principal[P any](ctx context.Context, key any, missing string) P {
	p, ok := lookupPrincipal[P](ctx, key)
	if !ok {
		panic("httpapi: " + missing)
	}
	return p
}

// lookupPrincipal is what withPrincipal (or a context value) holds under
// key, if it is a P.
func lookupPrincipal[P any](ctx context.Context, key any) (P, bool) {
	var v any
	if i := infoFrom(ctx); i != nil && i.authKey == key {
		v = i.auth
	} else {
		v = ctx.Value(key)
	}
	p, ok := v.(P)
	return p, ok
}
