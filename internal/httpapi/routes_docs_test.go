package httpapi

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/venue"
)

// updateRouteDocs, set by make generate, makes TestDocsAgreeWithRouter
// write the generated parts of the documents instead of comparing them.
const updateRouteDocs = "CONSENSUS_UPDATE_ROUTE_DOCS"

// TestDocsAgreeWithRouter: the generated parts of llms-full.txt (the
// credentials table among them; see docs_generated.go), the
// description and members of the claim's actions, and the capabilities
// document's endpoints and credentials say exactly what the router
// mounts. With CONSENSUS_UPDATE_ROUTE_DOCS=1 it rewrites the two files.
func TestDocsAgreeWithRouter(t *testing.T) {
	s := newProblemServer(t, pingFunc(func(context.Context) error { return nil }))
	table := s.routes()
	uses := participantRoutes(table)

	// Every route of the agent family is named once, with the credential
	// the router checks.
	mounted := map[string]string{}
	for _, rt := range table {
		if action, ok := strings.CutPrefix(rt.Pattern, agentroute.Pattern); ok {
			mounted[rt.Method+" "+action] = scheme(rt.Credential)
		}
		if rt.Pattern == "/mcp" {
			mounted[rt.Method+" /mcp"] = scheme(rt.Credential)
		}
	}
	described := map[string]string{}
	for _, u := range uses {
		for _, m := range u.Methods {
			described[m+" "+u.Path] = u.Scheme
		}
	}
	if !reflect.DeepEqual(mounted, described) {
		t.Fatalf("the routes the documents are made of %v differ from the router's %v", described, mounted)
	}

	// The capabilities document, as served.
	var caps Capabilities
	if err := json.Unmarshal(s.discoveryDocuments().capabilities.body, &caps); err != nil {
		t.Fatal(err)
	}
	for _, u := range uses {
		if u.Name == "mcp" {
			continue
		}
		e, ok := caps.Endpoints[u.Name]
		if !ok || !slices.Equal(e.Methods, u.Methods) || e.Credential != u.Scheme || !strings.HasSuffix(e.Href, "{invitationId}"+u.Path) {
			t.Errorf("capabilities endpoint %s is %+v; the router mounts %v %s with %s", u.Name, e, u.Methods, u.Path, u.Scheme)
		}
	}
	if len(caps.Endpoints) != len(uses)-1 {
		t.Errorf("capabilities name %d endpoints, the router mounts %d invitation routes", len(caps.Endpoints), len(uses)-1)
	}
	for _, c := range caps.Credentials {
		if want := acceptedBy(uses, c.Scheme); !slices.Equal(c.AcceptedBy, want) {
			t.Errorf("capabilities: %s accepted by %v, the router: %v", c.Scheme, c.AcceptedBy, want)
		}
	}
	if !slices.Contains(acceptedBy(uses, venue.SchemeParticipant), "mcp") || caps.Offered.MCP.Credential != venue.SchemeParticipant {
		t.Error("the MCP endpoint's credential is not stated")
	}

	// The claim's actions: one member per URL of the invitation the
	// participant calls after exchange.
	var actions map[string]any
	b, _ := json.Marshal(venue.Actions{})
	if err := json.Unmarshal(b, &actions); err != nil {
		t.Fatal(err)
	}
	var members []string
	for k := range actions {
		members = append(members, k)
	}
	want := actionNames(uses)
	if slices.Sort(members); !slices.Equal(members, sorted(want)) {
		t.Errorf("the claim's actions have members %v, the router mounts %v", members, want)
	}

	// The two files: llms-full.txt's generated parts, as generated for
	// the origin it is written with (docs_generated.go), and the
	// contract's description of the actions.
	llms, err := os.ReadFile("../../web/llms-full.txt")
	if err != nil {
		t.Fatal(err)
	}
	generated, err := applyParts(llms, docParts(consensus.DocumentOrigin, uses, s.capabilities()))
	if err != nil {
		t.Fatal(err)
	}
	if string(generated) != string(llms) {
		if os.Getenv(updateRouteDocs) != "" {
			if err := os.WriteFile("../../web/llms-full.txt", generated, 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			t.Errorf("web/llms-full.txt: its generated parts disagree with the service (make generate rewrites them)")
		}
	}
	files := []struct {
		path string
		re   *regexp.Regexp
		want string
	}{
		{"../../api/components.yaml", regexp.MustCompile(`(?m)^    Actions:\n      description: .*\n`),
			"    Actions:\n      description: " + yamlQuote(actionsDescription(uses)) + "\n"},
	}
	for _, f := range files {
		raw, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		loc := f.re.FindIndex(raw)
		if loc == nil {
			t.Fatalf("%s: the generated part is missing", f.path)
		}
		if got := string(raw[loc[0]:loc[1]]); got != f.want {
			if os.Getenv(updateRouteDocs) != "" {
				out := append(append(append([]byte{}, raw[:loc[0]]...), f.want...), raw[loc[1]:]...)
				if err := os.WriteFile(f.path, out, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			t.Errorf("%s disagrees with the router (make generate rewrites it):\n got: %s\nwant: %s", f.path, got, f.want)
		}
	}

	// The problem a wrong credential answers names the routes too.
	if d := problemTypes[ProblemUnauthorized].Explanation; !strings.Contains(d, venue.SchemeParticipant+" for "+joinWords(acceptedByWords(uses))) {
		t.Errorf("the unauthorized problem's explanation does not list %v: %s", acceptedByWords(uses), d)
	}
}

// acceptedByWords is the participant routes as the unauthorized problem
// names them.
func acceptedByWords(uses []routeUse) []string {
	var out []string
	for _, n := range acceptedBy(uses, venue.SchemeParticipant) {
		switch n {
		case "feed":
			continue // the same URL as events
		case "mcp":
			n = "MCP"
		case "recordProof":
			n = "record proof"
		}
		out = append(out, n)
	}
	return out
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func yamlQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
