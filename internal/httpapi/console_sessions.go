package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/consensus-md/consensus/internal/venue"
	"github.com/consensus-md/consensus/internal/workspace"
)

// The operators' console: pages under /console/ and the JSON they call
// under /console/api/. A signed-in operator's credential is a session
// cookie (HttpOnly, SameSite=Strict; Secure, and named with the __Host-
// prefix, everywhere but a local http origin, where a browser would refuse
// both). The console's reads and writes reuse the operator API's handlers:
// the session stands where the Bearer credential stands, with the scopes
// of the operator's role, and the audit log names the operator.
//
// A request that changes something must come from the console itself: its
// Origin is this service's origin, Sec-Fetch-Site (when the browser sends
// it) is same-origin, and it carries X-Consensus-CSRF, a token bound to the
// session (derived from the cookie's token, which a page reads from
// /console/api/session and a cross-site page cannot).

// consoleCSRFHeader carries the session's CSRF token.
const consoleCSRFHeader = "X-Consensus-CSRF"

// consoleChallenge is the WWW-Authenticate answer of the console's API.
const consoleChallenge = `Consensus-Console realm="consensus-console"`

type consoleKey struct{}

// consoleCookie is the session cookie's name for this origin.
func (s *Server) consoleCookie() string {
	if s.consoleInsecure() {
		return "consensus-console"
	}
	return "__Host-consensus-console"
}

// consoleInsecure: the origin is plain http (a local run), where a
// browser keeps no Secure cookie.
func (s *Server) consoleInsecure() bool { return strings.HasPrefix(s.origin, "http://") }

// csrfToken is the CSRF token of a session token: a one-way function of
// it, so it needs no storage and names no other session.
func csrfToken(sessionToken string) string {
	sum := sha256.Sum256([]byte("consensus console csrf\x00" + sessionToken))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// sameOrigin reports whether a state-changing request comes from a page
// of this origin.
func (s *Server) sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	return r.Header.Get("Origin") == s.origin
}

func (s *Server) crossSite() *Error {
	return &Error{Code: ProblemCrossSite, Detail: "a console request that changes something must come from this origin's console and carry its " + consoleCSRFHeader + " token"}
}

func (s *Server) consoleUnauthorized() *Error {
	return &Error{Code: ProblemUnauthorized, Detail: "sign in to the console again", Challenge: consoleChallenge}
}

// requireConsoleFor authenticates a console route (CredentialConsole): the
// session cookie (read from the database on each request), then for any
// method but GET and HEAD the origin and the CSRF token, then the route's
// scope, which the operator's role grants. Refusals after the session is
// known are recorded in the audit log as the operator API's are.
func (s *Server) requireConsoleFor(a operatorAction, write bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := r.Cookie(s.consoleCookie())
			if err != nil || c.Value == "" {
				s.writeProblem(w, r, s.consoleUnauthorized())
				return
			}
			ctx, cancel := s.bound(r.Context())
			sess, err := s.venue.AuthConsole(ctx, c.Value)
			cancel()
			if errors.Is(err, venue.ErrUnauthorized) {
				s.clearConsoleCookie(w)
				s.writeProblem(w, r, s.consoleUnauthorized())
				return
			}
			if err != nil {
				s.writeProblem(w, r, err)
				return
			}
			p := sess.Call.Principal
			if write {
				got := r.Header.Get(consoleCSRFHeader)
				if !s.sameOrigin(r) || subtle.ConstantTimeCompare([]byte(got), []byte(csrfToken(c.Value))) != 1 {
					r = s.withAuditHook(r, p, a, true)
					s.writeProblem(w, r, s.crossSite())
					return
				}
			}
			if a.Scope != "" && !p.Has(a.Scope) {
				r = s.withAuditHook(r, p, a, true)
				s.writeProblem(w, r, &venue.ScopeError{Missing: []workspace.Scope{a.Scope}})
				return
			}
			r = s.withAuditHook(r, p, a, a.Audited)
			r = r.WithContext(context.WithValue(r.Context(), consoleKey{}, &consoleState{session: sess, token: c.Value}))
			next.ServeHTTP(w, r)
		})
	}
}

type consoleState struct {
	session *venue.ConsoleSession
	token   string
}

func consoleFrom(ctx context.Context) *consoleState {
	return principal[*consoleState](ctx, consoleKey{}, "consoleFrom without requireConsoleFor on the route")
}

// requireSameOrigin guards the sign-in and enrollment requests, which come
// before any session: only this origin's pages may make them (WebAuthn
// binds the ceremony to the origin as well).
func (s *Server) requireSameOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.sameOrigin(r) {
			e := s.crossSite()
			if o := r.Header.Get("Origin"); o != "" && o != "null" && o != s.origin {
				// Most often the console opened at another name of this
				// host (127.0.0.1 for localhost): say where it works.
				e.Detail = "this page is at " + o + ", but the console works only at this service's origin, " + s.origin + ": open " + s.origin + "/console/ instead"
			}
			s.writeProblem(w, r, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) setConsoleCookie(w http.ResponseWriter, token string) {
	http.SetCookie(w, &http.Cookie{Name: s.consoleCookie(), Value: token, Path: "/", HttpOnly: true, Secure: !s.consoleInsecure(),
		SameSite: http.SameSiteStrictMode, MaxAge: int(venue.ConsoleIdle / time.Second)})
}

func (s *Server) clearConsoleCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: s.consoleCookie(), Value: "", Path: "/", HttpOnly: true, Secure: !s.consoleInsecure(),
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
}

// consoleCall is the audit context of a request made before a session.
func consoleCall(r *http.Request) venue.OperatorCall {
	return venue.OperatorCall{RequestID: requestID(r.Context()), ClientAddress: clientAddr(r.Context()).String()}
}

// sessionView is what /console/api/session and a sign-in answer.
type sessionView struct {
	Operator  venue.OperatorView `json:"operator"`
	Workspace string             `json:"workspace"`
	Scopes    []workspace.Scope  `json:"scopes"`
	CSRFToken string             `json:"csrfToken"`
}

func (s *Server) handleConsoleSession(w http.ResponseWriter, r *http.Request) {
	st := consoleFrom(r.Context())
	writeJSON(w, http.StatusOK, sessionView{Operator: st.session.Operator, Workspace: st.session.WorkspaceName,
		Scopes: st.session.Call.Scopes, CSRFToken: csrfToken(st.token)})
}

// signedIn sets the cookie of a new session and answers as the session
// route does.
func (s *Server) signedIn(w http.ResponseWriter, r *http.Request, in *venue.ConsoleSignIn) {
	ctx, cancel := s.bound(r.Context())
	defer cancel()
	sess, err := s.venue.AuthConsole(ctx, in.Token)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.setConsoleCookie(w, in.Token)
	writeJSON(w, http.StatusOK, sessionView{Operator: sess.Operator, Workspace: sess.WorkspaceName, Scopes: sess.Call.Scopes, CSRFToken: csrfToken(in.Token)})
}

func (s *Server) handleSignOut(w http.ResponseWriter, r *http.Request) {
	if err := noBody(r); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	st := consoleFrom(r.Context())
	if err := s.venue.SignOut(r.Context(), st.session, operatorFrom(r.Context())); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.clearConsoleCookie(w)
	w.WriteHeader(http.StatusNoContent)
}

// consoleEnded reads the console session of r again, under ctx: nil while
// it works, venue.ErrUnauthorized once it ended, another error when it
// could not be read.
func (s *Server) consoleEnded(ctx context.Context, r *http.Request) error {
	cookie, err := r.Cookie(s.consoleCookie())
	if err != nil {
		return venue.ErrUnauthorized
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	_, err = s.venue.AuthConsole(ctx, cookie.Value)
	return err
}

// answerConsoleEnded answers a request whose session consoleEnded could
// not read again: 401 with the cookie cleared when the session ended, or
// the error that kept it from knowing.
func (s *Server) answerConsoleEnded(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, venue.ErrUnauthorized) {
		s.clearConsoleCookie(w)
		s.writeProblem(w, r, s.consoleUnauthorized())
		return
	}
	s.writeProblem(w, r, err)
}
