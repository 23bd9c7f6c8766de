// Package workspace holds what the operator API knows of who is asking: the
// workspace a request acts in, the actor (an API key, an operator, the
// bootstrap token) and the scopes it holds. It is pure: no I/O.
package workspace

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// DefaultID is the id of the workspace named default, which a migration
// creates with this fixed id: it holds every agreement made before
// workspaces existed, and the bootstrap token acts as its owner.
var DefaultID = uuid.MustParse("00000000-0000-0000-0000-000000000001")

// DefaultName is the default workspace's name.
const DefaultName = "default"

// Scope is one permission an API key holds.
type Scope string

// The scopes, in the order they are listed everywhere.
const (
	AgreementsRead     Scope = "agreements:read"
	AgreementsWrite    Scope = "agreements:write"
	ParticipantsManage Scope = "participants:manage"
	KeysManage         Scope = "keys:manage"
	OperatorsManage    Scope = "operators:manage"
	AuditRead          Scope = "audit:read"
)

// AllScopes is every scope, in order: what an owner holds.
var AllScopes = []Scope{AgreementsRead, AgreementsWrite, ParticipantsManage, KeysManage, OperatorsManage, AuditRead}

// ParseScope returns the scope named s, or an error naming the scopes.
func ParseScope(s string) (Scope, error) {
	for _, sc := range AllScopes {
		if string(sc) == s {
			return sc, nil
		}
	}
	names := make([]string, len(AllScopes))
	for i, sc := range AllScopes {
		names[i] = string(sc)
	}
	return "", fmt.Errorf("%q is not a scope: the scopes are %s", s, strings.Join(names, ", "))
}

// Normalize returns scopes without repeats, in the order of AllScopes.
func Normalize(scopes []Scope) []Scope {
	out := make([]Scope, 0, len(scopes))
	for _, sc := range AllScopes {
		if slices.Contains(scopes, sc) {
			out = append(out, sc)
		}
	}
	return out
}

// Actor kinds.
const (
	// ActorBootstrap is the CONSENSUS_OPERATOR_TOKEN of the deployment.
	ActorBootstrap = "bootstrap"
	// ActorKey is an API key.
	ActorKey = "key"
	// ActorOperator is a person signed in to the console.
	ActorOperator = "operator"
	// ActorCLI is whoever runs consensusd with DATABASE_URL.
	ActorCLI = "cli"
)

// Actor is who acts: its kind, its id (a key's or operator's id; empty for
// the bootstrap token and the command line) and a name a person reads.
type Actor struct {
	Kind string
	ID   string
	Name string
}

// Principal is an authenticated operator request: the workspace it acts
// in, who acts, and what it may do.
type Principal struct {
	WorkspaceID uuid.UUID
	Actor       Actor
	Scopes      []Scope
}

// Has reports whether the principal holds scope.
func (p Principal) Has(scope Scope) bool { return slices.Contains(p.Scopes, scope) }

// Missing returns the scopes of want the principal does not hold, in
// order: a key may be given only scopes its creator holds.
func (p Principal) Missing(want []Scope) []Scope {
	var out []Scope
	for _, sc := range Normalize(want) {
		if !p.Has(sc) {
			out = append(out, sc)
		}
	}
	return out
}

// Bootstrap is the principal of the deployment's CONSENSUS_OPERATOR_TOKEN:
// an owner of the default workspace, with every scope.
func Bootstrap() Principal {
	return Principal{WorkspaceID: DefaultID, Actor: Actor{Kind: ActorBootstrap, Name: "CONSENSUS_OPERATOR_TOKEN"}, Scopes: slices.Clone(AllScopes)}
}

// Roles of operators.
const (
	RoleOwner    = "owner"
	RoleOperator = "operator"
	RoleViewer   = "viewer"
)

// RoleScopes returns the scopes an operator of role holds: an owner
// everything, an operator the agreements and participants, a viewer reading
// them. An unknown role holds nothing.
func RoleScopes(role string) []Scope {
	switch role {
	case RoleOwner:
		return slices.Clone(AllScopes)
	case RoleOperator:
		return []Scope{AgreementsRead, AgreementsWrite, ParticipantsManage}
	case RoleViewer:
		return []Scope{AgreementsRead}
	}
	return nil
}

// NormalizeEmail returns the form in which an operator's address is stored
// and compared: without surrounding space, in lower case. One person is
// then one operator of a workspace however they type their address.
func NormalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
