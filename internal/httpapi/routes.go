package httpapi

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/mcpfacade"
	"github.com/consensus-md/consensus/internal/venue"
	"github.com/consensus-md/consensus/internal/workspace"
)

// Credential is the kind of credential a route authenticates with. The
// router turns it into the route's last middleware (credentialMiddleware),
// so a route's row in the table is the whole truth about who may call it.
type Credential string

const (
	// CredentialNone: a public route.
	CredentialNone Credential = "none"
	// CredentialInvite: the invitation secret, which may travel in the body;
	// the handler reads it, so no middleware checks it first.
	CredentialInvite Credential = venue.SchemeInvite
	// CredentialSession: Consensus-Session for the invitation in the path.
	CredentialSession Credential = venue.SchemeSession
	// CredentialParticipant: Consensus-Participant for the invitation in
	// the path, checked before the handler.
	CredentialParticipant Credential = venue.SchemeParticipant
	// CredentialParticipantDeferred: Consensus-Participant read but not
	// checked; the venue checks it in the transaction that writes.
	CredentialParticipantDeferred Credential = venue.SchemeParticipant + " (checked in the write)"
	// CredentialParticipantToken: Consensus-Participant on a route without
	// an invitation in its path; the token names its invitation.
	CredentialParticipantToken Credential = venue.SchemeParticipant + " (any invitation)"
	// CredentialOperator: the Bearer bootstrap token or API key of an
	// operator, holding the route's Scope.
	CredentialOperator Credential = "Bearer"
	// CredentialConsole: the console's session cookie of a signed-in
	// operator, holding the route's Scope (if any) through its role; a
	// write must also be same-origin with the session's CSRF token.
	CredentialConsole Credential = "Console session"
)

// Route is one row of the route table: what the router mounts and what the
// documents describing the API can be generated from.
type Route struct {
	Method  string
	Pattern string
	// Credential authenticates the request after Middleware and before
	// Handler, so a handler reads the body only once the caller is known.
	Credential Credential
	// Scope is the operator scope the route requires (CredentialOperator
	// only); the contract states it as the operation's x-required-scope.
	Scope workspace.Scope
	// Action names the operator route's audit entries. A refusal by an
	// operator route's handler is recorded when the route writes (any
	// method but GET); a refusal of the credential itself always is.
	Action string
	// Middleware runs first, in order.
	Middleware []func(http.Handler) http.Handler
	Handler    http.HandlerFunc
	// Holds marks a GET whose answer may wait (Prefer: wait): a parked
	// connection's next request to it may be served off net/http
	// (internal/parked, serve.go; heldRoute).
	Holds bool
}

// routes is every route the server answers, with its credential and its
// middleware in the order they run. Handlers live in their resource files.
func (s *Server) routes() []Route {
	return s.routesServing(s.discoveryDocuments(), s.webPages())
}

// routeShapes is the table as the documents describing it read it: every
// row but with unrendered discovery documents and pages, so that the
// discovery documents can be derived from it.
func (s *Server) routeShapes() []Route {
	return s.routesServing(discoveryDocs{}, webPages{})
}

// routesServing is the table, serving docs and pages.
func (s *Server) routesServing(docs discoveryDocs, pages webPages) []Route {
	type mw = func(http.Handler) http.Handler
	chain := func(m ...mw) []mw { return m }
	kit := s.kitDocuments()
	operator := chain(noStore, s.boundDatabase)

	t := []Route{
		// Discovery: public documents, rendered once for the origin.
		{Method: http.MethodGet, Pattern: "/api/health", Credential: CredentialNone, Handler: s.handleHealth},
		{Method: http.MethodGet, Pattern: "/problems/{code}", Credential: CredentialNone, Handler: s.handleProblemType},
		{Method: http.MethodGet, Pattern: "/.well-known/consensus-agent", Credential: CredentialNone, Handler: docs.capabilities.serve},
		{Method: http.MethodHead, Pattern: "/.well-known/consensus-agent", Credential: CredentialNone, Handler: docs.capabilities.serve},
		{Method: http.MethodGet, Pattern: "/.well-known/api-catalog", Credential: CredentialNone, Handler: docs.apiCatalog.serve},
		{Method: http.MethodHead, Pattern: "/.well-known/api-catalog", Credential: CredentialNone, Handler: docs.apiCatalog.serve},
		{Method: http.MethodGet, Pattern: "/.well-known/consensus-keys", Credential: CredentialNone, Handler: s.handleSigningKeys},
		// The transparency log, as C2SP tlog-tiles lays it out.
		{Method: http.MethodGet, Pattern: "/log/checkpoint", Credential: CredentialNone, Handler: s.handleLogCheckpoint},
		{Method: http.MethodGet, Pattern: "/log/tile/*", Credential: CredentialNone, Handler: s.handleLogTile},
		{Method: http.MethodGet, Pattern: "/openapi.json", Credential: CredentialNone, Handler: docs.openapi.serve},
		{Method: http.MethodHead, Pattern: "/openapi.json", Credential: CredentialNone, Handler: docs.openapi.serve},
		{Method: http.MethodGet, Pattern: "/openapi-agent.json", Credential: CredentialNone, Handler: docs.openapiAgent.serve},
		{Method: http.MethodHead, Pattern: "/openapi-agent.json", Credential: CredentialNone, Handler: docs.openapiAgent.serve},
		{Method: http.MethodGet, Pattern: "/llms.txt", Credential: CredentialNone, Handler: docs.llms.serve},
		{Method: http.MethodHead, Pattern: "/llms.txt", Credential: CredentialNone, Handler: docs.llms.serve},
		{Method: http.MethodGet, Pattern: "/llms-full.txt", Credential: CredentialNone, Handler: docs.llmsFull.serve},
		{Method: http.MethodHead, Pattern: "/llms-full.txt", Credential: CredentialNone, Handler: docs.llmsFull.serve},
		{Method: http.MethodGet, Pattern: "/schemas/{name}/{version}", Credential: CredentialNone, Handler: s.handleSchema(docs.schemas)},

		// The agent's kit: the record verifier and its conformance vectors.
		{Method: http.MethodGet, Pattern: VerifierPath, Credential: CredentialNone, Handler: kit.verifier.serveTagged},
		{Method: http.MethodHead, Pattern: VerifierPath, Credential: CredentialNone, Handler: kit.verifier.serveTagged},
		{Method: http.MethodGet, Pattern: ConformancePath, Credential: CredentialNone, Handler: kit.index.serveTagged},
		{Method: http.MethodHead, Pattern: ConformancePath, Credential: CredentialNone, Handler: kit.index.serveTagged},
		{Method: http.MethodGet, Pattern: ConformancePath + "{name}", Credential: CredentialNone, Handler: s.handleAsset(kit.files)},
		{Method: http.MethodHead, Pattern: ConformancePath + "{name}", Credential: CredentialNone, Handler: s.handleAsset(kit.files)},

		// Pages for people and the files they load.
		{Method: http.MethodGet, Pattern: "/", Credential: CredentialNone, Handler: pages.index.serve},
		{Method: http.MethodHead, Pattern: "/", Credential: CredentialNone, Handler: pages.index.serve},
		{Method: http.MethodGet, Pattern: "/invite/{invitationId}", Credential: CredentialNone, Handler: s.handleInvitePage(pages.invite)},
		{Method: http.MethodGet, Pattern: "/assets/{name}", Credential: CredentialNone, Handler: s.handleAsset(pages.assets)},
		{Method: http.MethodHead, Pattern: "/assets/{name}", Credential: CredentialNone, Handler: s.handleAsset(pages.assets)},
		// Browsers ask for /favicon.ico whatever the page says: answer it
		// rather than leave a 404 in the console on every page.
		{Method: http.MethodGet, Pattern: "/favicon.ico", Credential: CredentialNone, Handler: s.handleAssetNamed(pages.assets, "favicon.ico")},
		{Method: http.MethodHead, Pattern: "/favicon.ico", Credential: CredentialNone, Handler: s.handleAssetNamed(pages.assets, "favicon.ico")},
	}
	// The operator API (routes_operator.go: each route written once, with
	// its scope and action, for these rows and the console's twins).
	api := s.operatorAPI()
	t = append(t, adminRows(api, operator)...)
	t = append(t, []Route{
		// The operators' console: its pages, sign-in and enrollment (same
		// origin only), its session, and then the operator API again with
		// the session (consoleRows).
		{Method: http.MethodGet, Pattern: "/console", Credential: CredentialNone, Handler: pages.console.serve},
		{Method: http.MethodGet, Pattern: "/console/", Credential: CredentialNone, Handler: pages.console.serve},
		{Method: http.MethodGet, Pattern: "/console/{page}", Credential: CredentialNone, Handler: s.handleConsolePage(pages.console)},
		{Method: http.MethodGet, Pattern: "/console/agreements/{agreementId}", Credential: CredentialNone, Handler: pages.console.serve},
		{Method: http.MethodPost, Pattern: "/console/api/enroll/begin", Credential: CredentialNone, Middleware: chain(noStore, s.requireSameOrigin, s.limit("exchange"), s.boundDatabase), Handler: s.handleEnrollBegin},
		{Method: http.MethodPost, Pattern: "/console/api/enroll/finish", Credential: CredentialNone, Middleware: chain(noStore, s.requireSameOrigin, s.limit("exchange"), s.boundDatabase), Handler: s.handleEnrollFinish},
		{Method: http.MethodPost, Pattern: "/console/api/signin/begin", Credential: CredentialNone, Middleware: chain(noStore, s.requireSameOrigin, s.limit("exchange"), s.boundDatabase), Handler: s.handleSignInBegin},
		{Method: http.MethodPost, Pattern: "/console/api/signin/finish", Credential: CredentialNone, Middleware: chain(noStore, s.requireSameOrigin, s.limit("exchange"), s.boundDatabase), Handler: s.handleSignInFinish},
		{Method: http.MethodGet, Pattern: "/console/api/session", Credential: CredentialConsole, Action: venue.ActionSessionRead, Middleware: operator, Handler: s.handleConsoleSession},
		{Method: http.MethodPost, Pattern: "/console/api/signout", Credential: CredentialConsole, Action: venue.ActionOperatorSignOut, Middleware: operator, Handler: s.handleSignOut},
		{Method: http.MethodGet, Pattern: "/console/api/passkeys", Credential: CredentialConsole, Action: venue.ActionPasskeyList, Middleware: operator, Handler: s.handlePasskeyList},
		{Method: http.MethodPost, Pattern: "/console/api/passkeys/begin", Credential: CredentialConsole, Action: venue.ActionPasskeyAdd, Middleware: operator, Handler: s.handlePasskeyBegin},
		{Method: http.MethodPost, Pattern: "/console/api/passkeys/finish", Credential: CredentialConsole, Action: venue.ActionPasskeyAdd, Middleware: operator, Handler: s.handlePasskeyFinish},
		{Method: http.MethodDelete, Pattern: "/console/api/passkeys/{passkeyId}", Credential: CredentialConsole, Action: venue.ActionPasskeyRemove, Middleware: operator, Handler: s.handlePasskeyRemove},
	}...)
	t = append(t, consoleRows(api, operator, chain(noStore))...)
	t = append(t, []Route{
		// MCP facade: POST only (stateless, no streams); every request is
		// authenticated, so a revoked token is refused at once.
		{Method: http.MethodPost, Pattern: "/mcp", Credential: CredentialParticipantToken, Middleware: chain(noStore, s.boundDatabase), Handler: s.handleMCP()},
	}...)

	// The agent API and the human API (the routes the invitation page
	// calls): the same handlers, rules and answers, for invitations of one
	// kind each (family puts the kind in the context), except that a
	// person's claim takes the email proof alone. Each family counts its
	// rate limits apart.
	for _, f := range []struct {
		pattern, kind string
		claim         http.HandlerFunc
	}{
		{agentroute.Pattern, agentroute.KindAgent, s.handleClaim},
		{agentroute.HumanPattern, agentroute.KindHuman, s.handleHumanClaim},
	} {
		family := s.family(f.kind)
		p := f.pattern
		t = append(t,
			Route{Method: http.MethodPost, Pattern: p + agentroute.Exchange, Credential: CredentialInvite, Middleware: chain(family, s.limit("exchange")), Handler: s.handleExchange},
			Route{Method: http.MethodPost, Pattern: p + agentroute.Claim, Credential: CredentialSession, Middleware: chain(family, s.limit("claim")), Handler: f.claim},
			Route{Method: http.MethodGet, Pattern: p + agentroute.Room, Credential: CredentialParticipant, Middleware: chain(family), Handler: s.handleRoom, Holds: true},
			Route{Method: http.MethodGet, Pattern: p + agentroute.Events, Credential: CredentialParticipant, Middleware: chain(family), Handler: s.handleEvents, Holds: true},
			Route{Method: http.MethodPost, Pattern: p + agentroute.Events, Credential: CredentialParticipantDeferred, Middleware: chain(family), Handler: s.handleEventsCreate},
			Route{Method: http.MethodGet, Pattern: p + agentroute.Stream, Credential: CredentialParticipant, Middleware: chain(family), Handler: s.handleStream},
			Route{Method: http.MethodPut, Pattern: p + agentroute.Webhook, Credential: CredentialParticipant, Middleware: chain(family), Handler: s.handleWebhookPut},
			Route{Method: http.MethodGet, Pattern: p + agentroute.Webhook, Credential: CredentialParticipant, Middleware: chain(family), Handler: s.handleWebhookGet},
			Route{Method: http.MethodDelete, Pattern: p + agentroute.Webhook, Credential: CredentialParticipant, Middleware: chain(family), Handler: s.handleWebhookDelete},
			Route{Method: http.MethodGet, Pattern: p + agentroute.Artifact, Credential: CredentialParticipant, Middleware: chain(family), Handler: s.handleArtifact},
			Route{Method: http.MethodHead, Pattern: p + agentroute.Artifact, Credential: CredentialParticipant, Middleware: chain(family), Handler: s.handleArtifact},
			Route{Method: http.MethodGet, Pattern: p + agentroute.Record, Credential: CredentialParticipant, Middleware: chain(family), Handler: s.handleRecord},
			Route{Method: http.MethodGet, Pattern: p + agentroute.RecordProof, Credential: CredentialParticipant, Middleware: chain(family), Handler: s.handleRecordProof},
		)
	}
	return t
}

// mount registers every route of the table on r, each with its middleware
// and then its credential's.
func (s *Server) mount(r chi.Router, table []Route) {
	for _, rt := range table {
		m := rt.Middleware
		if auth := s.credentialMiddleware(rt); auth != nil {
			m = append(m[:len(m):len(m)], auth)
		}
		r.With(m...).Method(rt.Method, rt.Pattern, rt.Handler)
	}
}

// credentialMiddleware is the middleware that checks the route's
// credential (for an operator route, with its scope), or nil when the
// handler reads the credential itself (exchange) or there is none.
func (s *Server) credentialMiddleware(rt Route) func(http.Handler) http.Handler {
	switch c := rt.Credential; c {
	case CredentialNone, CredentialInvite:
		return nil
	case CredentialSession:
		return s.requireSession
	case CredentialParticipant:
		return s.requireParticipant
	case CredentialParticipantDeferred:
		return s.participantCredential
	case CredentialParticipantToken:
		return s.requireParticipantToken
	case CredentialOperator:
		return s.requireOperatorFor(operatorAction{Scope: rt.Scope, Action: rt.Action, Audited: rt.Method != http.MethodGet})
	case CredentialConsole:
		write := rt.Method != http.MethodGet && rt.Method != http.MethodHead
		return s.requireConsoleFor(operatorAction{Scope: rt.Scope, Action: rt.Action, Audited: write}, write)
	}
	panic("httpapi: route credential " + string(rt.Credential) + " has no middleware")
}

// handleMCP is the MCP facade's handler, its answers kept inside the
// contract by mcpWriter.
func (s *Server) handleMCP() http.HandlerFunc {
	h := mcpfacade.Handler(mcpfacade.Options{
		Venue: s.venue,
		Principal: func(ctx context.Context) (*venue.Principal, bool) {
			return lookupPrincipal[*venue.Principal](ctx, participantKey{})
		},
		Describe: s.refusal,
		Version:  s.version,
		Origin:   s.origin,
		Bound:    s.bound,
		Wait:     s.mcpWait,
	})
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), mcpExchangeKey{}, mcpExchange{w: w, r: r})
		h.ServeHTTP(&mcpWriter{ResponseWriter: w, s: s, r: r}, r.WithContext(mcpContext{Context: requestContext(r), values: ctx}))
	}
}
