package httpapi

import (
	"net/http"

	"github.com/consensus-md/consensus/internal/venue"
	"github.com/consensus-md/consensus/internal/workspace"
)

// Where the operator API is served: under adminAPI with an operator's
// Bearer credential, and under consoleAPI, its console twin, with a
// signed-in operator's session.
const (
	adminAPI   = "/api/v1/admin"
	consoleAPI = "/console/api"
)

// operatorRoute is a route of the operator API, written once: the table's
// row under adminAPI (adminRows) and its console twin under consoleAPI
// (consoleRows) are derived from it, with the same scope and action.
type operatorRoute struct {
	method string
	path   string // under adminAPI and consoleAPI
	scope  workspace.Scope
	action string
	// handler serves both rows, unless held is set.
	handler http.HandlerFunc
	// held, when set, is the console twin's handler: a read that may be
	// held, so it runs without the database bound, which it outlives.
	held http.HandlerFunc
	// consoleOnly: the console serves it, the operator API does not.
	consoleOnly bool
}

// operatorAPI is every route of the operator API and of its console twin.
func (s *Server) operatorAPI() []operatorRoute {
	const get, post, put, del = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete
	return []operatorRoute{
		{method: post, path: "/agreements", scope: workspace.AgreementsWrite, action: venue.ActionAgreementCreate, handler: s.handleAgreementCreate},
		{method: get, path: "/agreements", scope: workspace.AgreementsRead, action: venue.ActionAgreementList, handler: s.handleAgreementList, held: s.handleConsoleAgreements},
		{method: get, path: "/agreements/{agreementId}", scope: workspace.AgreementsRead, action: venue.ActionAgreementRead, handler: s.handleAgreementGet, held: s.handleConsoleAgreement},
		{method: get, path: "/agreements/{agreementId}/artifact", scope: workspace.AgreementsRead, action: venue.ActionAgreementRead, handler: s.handleConsoleArtifact, consoleOnly: true},
		{method: get, path: "/agreements/{agreementId}/record", scope: workspace.AgreementsRead, action: venue.ActionAgreementRead, handler: s.handleConsoleRecord, consoleOnly: true},
		{method: get, path: "/agreements/{agreementId}/record/proof", scope: workspace.AgreementsRead, action: venue.ActionAgreementRead, handler: s.handleAdminRecordProof},
		{method: post, path: "/agreements/{agreementId}/revisions", scope: workspace.AgreementsWrite, action: venue.ActionAgreementAmend, handler: s.handleAgreementAmend},
		{method: post, path: "/participants/{participantId}/revoke", scope: workspace.ParticipantsManage, action: venue.ActionParticipantRevoke, handler: s.handleParticipantRevoke},
		{method: post, path: "/invitations/{invitationId}/resend", scope: workspace.ParticipantsManage, action: venue.ActionInvitationResend, handler: s.handleInvitationResend},
		{method: post, path: "/keys", scope: workspace.KeysManage, action: venue.ActionKeyCreate, handler: s.handleKeyCreate},
		{method: get, path: "/keys", scope: workspace.KeysManage, action: venue.ActionKeyList, handler: s.handleKeyList},
		{method: del, path: "/keys/{keyId}", scope: workspace.KeysManage, action: venue.ActionKeyRevoke, handler: s.handleKeyRevoke},
		{method: get, path: "/audit", scope: workspace.AuditRead, action: venue.ActionAuditRead, handler: s.handleAuditList},
		{method: get, path: "/operators", scope: workspace.AgreementsRead, action: venue.ActionOperatorList, handler: s.handleOperatorList, consoleOnly: true},
		{method: post, path: "/operators", scope: workspace.OperatorsManage, action: venue.ActionOperatorInvite, handler: s.handleOperatorInvite, consoleOnly: true},
		{method: put, path: "/operators/{operatorId}/role", scope: workspace.OperatorsManage, action: venue.ActionOperatorRole, handler: s.handleOperatorRole, consoleOnly: true},
		{method: del, path: "/operators/{operatorId}", scope: workspace.OperatorsManage, action: venue.ActionOperatorRemove, handler: s.handleOperatorRemove, consoleOnly: true},
	}
}

// adminRows is the operator API's rows: the Bearer credential, after mw.
func adminRows(api []operatorRoute, mw []func(http.Handler) http.Handler) []Route {
	var t []Route
	for _, o := range api {
		if !o.consoleOnly {
			t = append(t, Route{Method: o.method, Pattern: adminAPI + o.path, Credential: CredentialOperator, Scope: o.scope, Action: o.action,
				Middleware: mw, Handler: o.handler})
		}
	}
	return t
}

// consoleRows is the console's rows: the session in place of the Bearer
// credential, after mw, or after held for a held read.
func consoleRows(api []operatorRoute, mw, held []func(http.Handler) http.Handler) []Route {
	t := make([]Route, 0, len(api))
	for _, o := range api {
		rt := Route{Method: o.method, Pattern: consoleAPI + o.path, Credential: CredentialConsole, Scope: o.scope, Action: o.action,
			Middleware: mw, Handler: o.handler}
		if o.held != nil {
			rt.Middleware, rt.Handler = held, o.held
		}
		t = append(t, rt)
	}
	return t
}

// operatorURL is the absolute URL of path in the operator API the request
// came through: the console's twin for a console request, which its
// session can follow, the Bearer API's otherwise.
func (s *Server) operatorURL(r *http.Request, path string) string {
	if _, ok := lookupPrincipal[*consoleState](r.Context(), consoleKey{}); ok {
		return s.origin + consoleAPI + path
	}
	return s.origin + adminAPI + path
}
