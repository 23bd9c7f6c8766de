package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/workspace"
)

// TestRouteTable: each method and pattern appears once; every credential
// has its middleware (or none by design); the operator API and only it
// takes the operator token; the agent and human families have the same
// routes with the same credentials.
func TestRouteTable(t *testing.T) {
	t.Parallel()
	s := newProblemServer(t, pingFunc(func(context.Context) error { return nil }))
	seen := map[string]bool{}
	families := map[string]map[string]Credential{agentroute.Pattern: {}, agentroute.HumanPattern: {}}
	for _, rt := range s.routes() {
		key := rt.Method + " " + rt.Pattern
		if seen[key] {
			t.Errorf("%s is in the table twice", key)
		}
		seen[key] = true
		_ = s.credentialMiddleware(rt) // panics on a kind without middleware
		if admin := strings.HasPrefix(rt.Pattern, "/api/v1/admin/"); admin != (rt.Credential == CredentialOperator) {
			t.Errorf("%s: credential %s", key, rt.Credential)
		}
		operatorRoute := rt.Credential == CredentialOperator || rt.Credential == CredentialConsole
		_, err := workspace.ParseScope(string(rt.Scope))
		scoped := err == nil || rt.Credential == CredentialConsole && rt.Scope == ""
		if scoped != operatorRoute || (rt.Action == "") != !operatorRoute {
			t.Errorf("%s: scope %q, action %q: an operator or console route needs both (a console route may need no scope), another route neither", key, rt.Scope, rt.Action)
		}
		if console := strings.HasPrefix(rt.Pattern, "/console/api/"); console && rt.Credential != CredentialConsole && rt.Credential != CredentialNone {
			t.Errorf("%s: a console API route with credential %s", key, rt.Credential)
		}
		if rt.Handler == nil || rt.Method == "" {
			t.Errorf("%s: incomplete row", key)
		}
		for prefix, f := range families {
			if action, ok := strings.CutPrefix(rt.Pattern, prefix); ok {
				f[rt.Method+" "+action] = rt.Credential
			}
		}
	}
	agent, human := families[agentroute.Pattern], families[agentroute.HumanPattern]
	if len(agent) == 0 || len(agent) != len(human) {
		t.Fatalf("agent routes %v, human routes %v", agent, human)
	}
	for k, c := range agent {
		if human[k] != c {
			t.Errorf("%s: agent %s, human %s", k, c, human[k])
		}
	}
	if !seen[http.MethodPost+" /mcp"] {
		t.Error("the MCP route is missing")
	}
}

// TestConsoleViewerChangesNothing: every console route that changes
// something needs a scope the viewer role lacks, except signing out and
// the viewer's own passkeys, which concern only the viewer.
func TestConsoleViewerChangesNothing(t *testing.T) {
	t.Parallel()
	s := newProblemServer(t, pingFunc(func(context.Context) error { return nil }))
	viewer := workspace.Principal{Scopes: workspace.RoleScopes(workspace.RoleViewer)}
	for _, rt := range s.routes() {
		if rt.Credential != CredentialConsole || rt.Method == http.MethodGet || rt.Pattern == "/console/api/signout" ||
			strings.HasPrefix(rt.Pattern, "/console/api/passkeys") {
			continue
		}
		if rt.Scope == "" || viewer.Has(rt.Scope) {
			t.Errorf("%s %s: a viewer holds its scope %q", rt.Method, rt.Pattern, rt.Scope)
		}
	}
}
