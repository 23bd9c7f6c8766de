package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

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
			s.writeProblem(w, r, s.crossSite())
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

type enrollBeginInput struct {
	Token string `json:"token"`
}

type enrollFinishInput struct {
	CeremonyID  string          `json:"ceremonyId"`
	Token       string          `json:"token"`
	DisplayName string          `json:"displayName"`
	Credential  json.RawMessage `json:"credential"`
}

type signInFinishInput struct {
	CeremonyID string          `json:"ceremonyId"`
	Credential json.RawMessage `json:"credential"`
}

// limitCeremony bounds a WebAuthn response (attestation objects are a few
// kilobytes).
var limitCeremony = bodyLimit{Bytes: 64 << 10, Wire: 64 << 10}

// readCeremony decodes a ceremony body with encoding/json: a passkey's
// response is the browser's JSON, whose members the decoder must not judge.
func readCeremony(r *http.Request, dst any) error {
	if err := checkContentType(r); err != nil {
		return err
	}
	b, err := readBody(r, limitCeremony)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(dst); err != nil {
		return malformed("the body must be the JSON object the console sends")
	}
	return nil
}

func (s *Server) handleEnrollBegin(w http.ResponseWriter, r *http.Request) {
	var in enrollBeginInput
	if err := readCeremony(r, &in); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.venue.EnrollBegin(r.Context(), in.Token)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleEnrollFinish(w http.ResponseWriter, r *http.Request) {
	var in enrollFinishInput
	if err := readCeremony(r, &in); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.venue.EnrollFinish(r.Context(), in.CeremonyID, in.Token, in.DisplayName, in.Credential, consoleCall(r))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.signedIn(w, r, out)
}

func (s *Server) handleSignInBegin(w http.ResponseWriter, r *http.Request) {
	if err := noBody(r); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.venue.SignInBegin(r.Context())
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleSignInFinish(w http.ResponseWriter, r *http.Request) {
	var in signInFinishInput
	if err := readCeremony(r, &in); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.venue.SignInFinish(r.Context(), in.CeremonyID, in.Credential, consoleCall(r))
	if errors.Is(err, venue.ErrUnauthorized) {
		s.writeProblem(w, r, &Error{Code: ProblemUnauthorized, Detail: "this passkey does not sign in to any workspace of this service", Challenge: consoleChallenge})
		return
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.signedIn(w, r, out)
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

func (s *Server) handleOperatorList(w http.ResponseWriter, r *http.Request) {
	out, err := s.venue.ListOperators(r.Context(), operatorFrom(r.Context()))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleOperatorInvite(w http.ResponseWriter, r *http.Request) {
	in, err := decodeBody[venue.OperatorInput](r, limitKey)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	ctx, cancel := s.afterBody(r)
	defer cancel()
	out, err := s.venue.InviteOperator(ctx, operatorFrom(r.Context()), in)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) handleOperatorRole(w http.ResponseWriter, r *http.Request) {
	in, err := decodeBody[venue.RoleInput](r, limitKey)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	ctx, cancel := s.afterBody(r)
	defer cancel()
	out, err := s.venue.SetOperatorRole(ctx, operatorFrom(r.Context()), chi.URLParam(r, "operatorId"), in)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleOperatorRemove(w http.ResponseWriter, r *http.Request) {
	if err := noBody(r); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	out, err := s.venue.RemoveOperator(r.Context(), operatorFrom(r.Context()), chi.URLParam(r, "operatorId"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// handleConsoleAgreement is one agreement for the console, held when asked
// (Prefer: wait=N with If-None-Match naming what the page shows) until the
// room changes on any replica, the wait ends, or the session ends.
func (s *Server) handleConsoleAgreement(w http.ResponseWriter, r *http.Request) {
	c := operatorFrom(r.Context())
	id := chi.URLParam(r, "agreementId")
	read := func() ([]byte, string, error) {
		ctx, cancel := s.bound(r.Context())
		defer cancel()
		d, err := s.venue.GetAgreement(ctx, c, id)
		if err != nil {
			return nil, "", err
		}
		terms, err := s.venue.GetAgreementTerms(ctx, c, id)
		if err != nil {
			return nil, "", err
		}
		b, err := json.Marshal(struct {
			*venue.AgreementDetail
			*venue.AgreementTerms
		}{d, terms})
		if err != nil {
			return nil, "", err
		}
		sum := sha256.Sum256(b)
		return b, `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`, nil
	}
	body, tag, err := read()
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	wait := preferWait(w, r)
	if wait > 0 && etagMatches(r.Header.Get("If-None-Match"), tag) {
		agreementID, _ := uuid.Parse(id)
		operatorID, _ := uuid.Parse(c.Actor.ID)
		holdDeadline(w, wait+holdSlack)
		waiter, err := s.hub.Join(agreementID, operatorID)
		if err != nil {
			w.Header().Del("Preference-Applied")
			s.writeProblem(w, r, err)
			return
		}
		// The workspace's signal wakes it too, to notice at once a
		// removal that ends this session.
		others, err := s.lists.Join(c.WorkspaceID, operatorID)
		if err != nil {
			waiter.Leave()
			w.Header().Del("Preference-Applied")
			s.writeProblem(w, r, err)
			return
		}
		timer := time.NewTimer(wait)
	hold:
		for {
			select {
			case <-waiter.Changed():
			case <-others.Changed():
				if s.consoleEnded(r) == nil {
					continue
				}
			case <-timer.C:
			case <-waiter.Closing():
			case <-r.Context().Done():
			}
			break hold
		}
		timer.Stop()
		waiter.Leave()
		others.Leave()
		if r.Context().Err() != nil {
			return
		}
		// The session may have ended while the request waited.
		if !s.consoleStillSignedIn(w, r) {
			return
		}
		if body, tag, err = read(); err != nil {
			s.writeProblem(w, r, err)
			return
		}
	}
	w.Header().Set("ETag", tag)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// handleConsoleAgreements is the console's agreement list, each line with
// what it waits for. Asked to (Prefer: wait=N with If-None-Match naming
// the list the page shows), it holds the request until something in the
// workspace changes on any replica in a way the list shows, the wait ends,
// or the session ends.
func (s *Server) handleConsoleAgreements(w http.ResponseWriter, r *http.Request) {
	c := operatorFrom(r.Context())
	limit, err := agreementPageLimit(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	cursor := r.URL.Query().Get("cursor")
	read := func(full bool) (*venue.ConsoleAgreementPage, string, error) {
		ctx, cancel := s.bound(r.Context())
		defer cancel()
		return s.venue.ConsoleAgreements(ctx, c, limit, cursor, full)
	}
	wait := preferWait(w, r)
	if seen := r.Header.Get("If-None-Match"); wait > 0 && seen != "" {
		// Join before reading: a change committed after the read wakes it.
		operatorID, _ := uuid.Parse(c.Actor.ID)
		waiter, err := s.lists.Join(c.WorkspaceID, operatorID)
		if err != nil {
			w.Header().Del("Preference-Applied")
			s.writeProblem(w, r, err)
			return
		}
		defer waiter.Leave()
		_, tag, err := read(false)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		if etagMatches(seen, tag) {
			holdDeadline(w, wait+holdSlack)
			timer := time.NewTimer(wait)
			defer timer.Stop()
		hold:
			for {
				select {
				case <-waiter.Changed():
					// Another workspace's change never comes here; one the
					// list does not show (a later page) keeps the hold,
					// unless it ended this session (a removal).
					if s.consoleEnded(r) != nil {
						break hold
					}
					if _, tag, err = read(false); err != nil || !etagMatches(seen, tag) {
						break hold
					}
					continue
				case <-timer.C:
				case <-waiter.Closing():
				case <-r.Context().Done():
					return
				}
				break
			}
			// The session may have ended while the request waited.
			if !s.consoleStillSignedIn(w, r) {
				return
			}
		}
	}
	page, tag, err := read(true)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	b, err := json.Marshal(page)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	w.Header().Set("ETag", tag)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// consoleEnded reads the request's console session again: nil while it
// works, venue.ErrUnauthorized once it ended, another error when it could
// not be read.
func (s *Server) consoleEnded(r *http.Request) error {
	cookie, err := r.Cookie(s.consoleCookie())
	if err != nil {
		return venue.ErrUnauthorized
	}
	ctx, cancel := s.bound(r.Context())
	defer cancel()
	_, err = s.venue.AuthConsole(ctx, cookie.Value)
	return err
}

// handleConsoleRecord serves an agreement's signed record to the console,
// as the participant route serves it: the stored bytes, their SHA-256 in
// the ETag.
func (s *Server) handleConsoleRecord(w http.ResponseWriter, r *http.Request) {
	rec, err := s.venue.ConsoleRecord(r.Context(), operatorFrom(r.Context()), chi.URLParam(r, "agreementId"))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	h := w.Header()
	h.Set("ETag", `"sha256-`+rec.SHA256+`"`)
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(rec.Body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(rec.Body)
}

// consoleStillSignedIn reports whether the session of r is still live; if
// not, it has answered: 401 with the cookie cleared when the session ended,
// or the error that kept it from knowing.
func (s *Server) consoleStillSignedIn(w http.ResponseWriter, r *http.Request) bool {
	err := s.consoleEnded(r)
	switch {
	case errors.Is(err, venue.ErrUnauthorized):
		s.clearConsoleCookie(w)
		s.writeProblem(w, r, s.consoleUnauthorized())
		return false
	case err != nil:
		s.writeProblem(w, r, err)
		return false
	}
	return true
}
