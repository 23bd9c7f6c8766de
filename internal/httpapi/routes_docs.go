package httpapi

import (
	"net/http"
	"strings"

	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/venue"
)

// The documents that say which credential each participant route takes
// (the capabilities document, the claim's actions, the credentials table
// of llms-full.txt) are derived from the route table, so they cannot
// disagree with the router.

// routeUse is one participant-facing route of the table, by the name the
// documents give it.
type routeUse struct {
	// Name is the action's name: the path after the invitation, its
	// segments joined in camel case ("record/proof" is "recordProof"; GET
	// events is "feed", POST events "events"), or "mcp".
	Name    string
	Methods []string
	// Path is the route's pattern relative to the invitation's base URL,
	// or the absolute path of a route outside it.
	Path string
	// Scheme is the Authorization scheme the route takes.
	Scheme string
}

// participantRoutes lists, in table order, the agent family's routes
// merged by name, then the MCP route: what an invited agent calls.
func participantRoutes(table []Route) []routeUse {
	var out []routeUse
	index := map[string]int{}
	add := func(name, method, path string, c Credential) {
		if i, ok := index[name]; ok {
			if out[i].Scheme != scheme(c) {
				panic("httpapi: action " + name + " takes two credentials")
			}
			out[i].Methods = append(out[i].Methods, method)
			return
		}
		index[name] = len(out)
		out = append(out, routeUse{Name: name, Methods: []string{method}, Path: path, Scheme: scheme(c)})
	}
	for _, rt := range table {
		action, ok := strings.CutPrefix(rt.Pattern, agentroute.Pattern)
		if !ok {
			continue
		}
		name := actionName(action)
		if action == agentroute.Events && rt.Method == http.MethodGet {
			name = "feed"
		}
		add(name, rt.Method, action, rt.Credential)
	}
	for _, rt := range table {
		if rt.Pattern == "/mcp" {
			add("mcp", rt.Method, rt.Pattern, rt.Credential)
		}
	}
	return out
}

// actionName is the name of an action path: its segments in camel case,
// "/record/proof" is "recordProof".
func actionName(path string) string {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := 1; i < len(parts); i++ {
		if p := parts[i]; p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "")
}

// scheme is the Authorization scheme of a credential kind.
func scheme(c Credential) string {
	switch c {
	case CredentialParticipant, CredentialParticipantDeferred, CredentialParticipantToken:
		return venue.SchemeParticipant
	}
	return string(c)
}

// acceptedBy is the names of the routes that take scheme, in table order.
func acceptedBy(uses []routeUse, scheme string) []string {
	var out []string
	for _, u := range uses {
		if u.Scheme == scheme {
			out = append(out, u.Name)
		}
	}
	return out
}

// joinWords joins names as prose: "a, b and c".
func joinWords(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// ActionNames is the members of the claim's actions, in table order: the
// routes of one invitation a participant calls after exchange, one per
// URL (feed and events share theirs), without MCP, which has no URL per
// invitation.
func actionNames(uses []routeUse) []string {
	var out []string
	for _, u := range uses {
		switch u.Name {
		case "exchange", "feed", "mcp":
			continue
		}
		out = append(out, u.Name)
	}
	return out
}

// actionsDescription is the description of the Actions schema of the
// contract, generated from the table.
func actionsDescription(uses []routeUse) string {
	return "Absolute URLs of this invitation's routes, built from the public origin, in the family of the invitation (`/api/v1/agent/` for an agent, `/api/v1/human/` for a person): " +
		joinWords(quoted(actionNames(uses))) + ". `events` is also the feed (GET); the MCP endpoint, which takes the participant token too, is the same for every invitation (see the capabilities document)."
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "`" + n + "`"
	}
	return out
}

// credentialsTable is the credentials table of llms-full.txt, generated
// from the table.
func credentialsTable(uses []routeUse) string {
	only := func(s string) string {
		names := acceptedBy(uses, s)
		if len(names) == 1 {
			return names[0] + " only"
		}
		return strings.Join(names, ", ")
	}
	var b strings.Builder
	b.WriteString("| Stage | Credential | Sent as | Accepted by | Lifetime |\n")
	b.WriteString("| --- | --- | --- | --- | --- |\n")
	b.WriteString("| Exchange | invitation secret | JSON `{\"secret\": \"...\"}` or `Authorization: Consensus-Invite <secret>` | " + only(venue.SchemeInvite) + " | until the deadline |\n")
	b.WriteString("| Claim | session token (`css_...`) | `Authorization: Consensus-Session <token>` | " + only(venue.SchemeSession) + " | at most 20 minutes, never past the deadline |\n")
	b.WriteString("| Participate | participant token (`csp_...`) | `Authorization: Consensus-Participant <token>` | " + only(venue.SchemeParticipant) + " | until the operator revokes it |\n")
	return b.String()
}
