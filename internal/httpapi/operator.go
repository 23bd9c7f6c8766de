package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/venue"
	"github.com/consensus-md/consensus/internal/workspace"
)

// operatorAction is what an operator route does, for its credential check
// and its audit entries: the scope it needs, the action its entries name,
// and whether a refusal by the handler is recorded (the writes are; a read
// refused for a missing row is not). A refusal for the credential itself
// (a revoked or expired key, a missing scope) is always recorded.
type operatorAction struct {
	Scope   workspace.Scope
	Action  string
	Audited bool
}

// auditHook is what writeProblem needs to record a refused operator
// request in its workspace's audit log before it answers.
type auditHook struct {
	call    venue.OperatorCall
	action  string
	targets map[string]string
	// audited: a refusal by the handler is recorded too.
	audited bool
}

type auditHookKey struct{}

// auditTargets are the path parameters an audit entry names.
var auditTargets = []string{"agreementId", "participantId", "invitationId", "keyId", "operatorId"}

// isID reports whether a path value is an id as the service writes one:
// a UUID in its canonical lower-case form. Any other value names nothing
// (the venue answers it 404) and stays out of audit entries: it is the
// client's text, which could hold terminal escapes or bidirectional
// overrides for whoever reads the log.
func isID(v string) bool {
	u, err := uuid.Parse(v)
	return err == nil && u.String() == v
}

// requireOperatorFor authenticates an operator route (the route table's
// CredentialOperator): the Bearer token is
// the bootstrap CONSENSUS_OPERATOR_TOKEN (an owner of the default
// workspace, compared in constant time with its configured hash) or a cok_
// API key (venue.AuthKey). No or an unknown credential is 401
// unauthorized; a revoked or expired key 401 key-revoked or key-expired; a
// credential without the route's scope 403 insufficient-scope naming it.
// The call (principal, request id, client address) goes in the context for
// operatorFrom. It must run after the route matched (chi's With), so that
// the path's ids are known.
func (s *Server) requireOperatorFor(a operatorAction) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token := credential(r, "Bearer")
			if token == "" {
				s.writeProblem(w, r, &Error{Code: ProblemUnauthorized, Detail: "a valid operator Bearer token is required", Challenge: operatorChallenge})
				return
			}
			var p workspace.Principal
			sum := sha256.Sum256([]byte(token))
			if subtle.ConstantTimeCompare(sum[:], s.operatorHash[:]) == 1 {
				p = workspace.Bootstrap()
			} else {
				var err error
				p, err = s.venue.AuthKey(r.Context(), token)
				switch {
				case errors.Is(err, venue.ErrKeyRevoked):
					r = s.withAuditHook(r, p, a, true)
					s.writeProblem(w, r, &Error{Code: ProblemKeyRevoked, Detail: err.Error(), Challenge: operatorChallenge + `, error="invalid_token"`})
					return
				case errors.Is(err, venue.ErrKeyExpired):
					r = s.withAuditHook(r, p, a, true)
					s.writeProblem(w, r, &Error{Code: ProblemKeyExpired, Detail: err.Error(), Challenge: operatorChallenge + `, error="invalid_token"`})
					return
				case errors.Is(err, venue.ErrUnauthorized):
					s.writeProblem(w, r, &Error{Code: ProblemUnauthorized, Detail: "a valid operator Bearer token is required", Challenge: operatorChallenge})
					return
				case err != nil:
					s.writeProblem(w, r, err)
					return
				}
			}
			if !p.Has(a.Scope) {
				r = s.withAuditHook(r, p, a, true)
				s.writeProblem(w, r, &venue.ScopeError{Missing: []workspace.Scope{a.Scope}})
				return
			}
			next.ServeHTTP(w, s.withAuditHook(r, p, a, a.Audited))
		})
	}
}

// withAuditHook puts the call, and what writeProblem needs to record a
// refusal, in r's context.
func (s *Server) withAuditHook(r *http.Request, p workspace.Principal, a operatorAction, audited bool) *http.Request {
	ctx := r.Context()
	c := venue.OperatorCall{Principal: p, RequestID: requestID(ctx), ClientAddress: clientAddr(ctx).String()}
	targets := map[string]string{}
	if rc := chi.RouteContext(ctx); rc != nil {
		for _, name := range auditTargets {
			if v := rc.URLParam(name); isID(v) {
				targets[name] = v
			}
		}
	}
	ctx = context.WithValue(ctx, operatorKey{}, c)
	ctx = context.WithValue(ctx, auditHookKey{}, &auditHook{call: c, action: a.Action, targets: targets, audited: audited})
	return r.WithContext(ctx)
}

// recordRefusal appends the audit entry of a refused operator request,
// when the route records it, before the answer is written: once a client
// has its answer, the entry exists. A failure to record is logged, not
// answered. A database that is unavailable cannot take the entry either:
// trying would only double the wait of the 503.
func (s *Server) recordRefusal(r *http.Request, code ProblemCode) {
	h, _ := r.Context().Value(auditHookKey{}).(*auditHook)
	if h == nil || !h.audited || s.venue == nil {
		return
	}
	h.audited = false // one entry per request
	if code == ProblemUnavailable {
		s.log.WarnContext(r.Context(), "audit entry of a refused request not recorded: the database is unavailable", slog.String("request_id", h.call.RequestID))
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.dbTimeout)
	defer cancel()
	if err := s.venue.RecordRefusal(ctx, h.call, h.action, h.targets, code.String()); err != nil {
		s.log.WarnContext(ctx, "audit entry of a refused request not recorded", slog.String("request_id", h.call.RequestID), slog.String("error", err.Error()))
	}
}

// skipRefusalAudit keeps a request's refusals out of the audit log (a dry
// run records nothing).
func skipRefusalAudit(r *http.Request) {
	if h, _ := r.Context().Value(auditHookKey{}).(*auditHook); h != nil {
		h.audited = false
	}
}
