package consensus_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/workspace"
)

// documents are the two published OpenAPI documents.
var documents = map[string][]byte{"openapi.json": consensus.OpenAPI, "openapi-agent.json": consensus.OpenAPIAgent}

// loadDocument decodes an OpenAPI document the way the schema library
// wants it (numbers kept exact) and returns a compiler that resolves
// "<base>#/json/pointer" against it.
func loadDocument(t *testing.T, name string, raw []byte) (any, *jsonschema.Compiler, string) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	base := "urn:consensus:" + name
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(base, doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return doc, c, base
}

// pointerToken escapes one JSON pointer segment.
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

var schemaKeywords = []string{"type", "$ref", "oneOf", "anyOf", "allOf", "enum", "const", "properties"}

// exampleSites finds every example in an OpenAPI document with the JSON
// pointer of the schema it must satisfy: example and examples.*.value of a
// media type, parameter or header (against its schema), and the example of
// a schema object (against that schema).
func exampleSites(node any, ptr string, visit func(where, schemaPtr string, value any)) {
	switch n := node.(type) {
	case map[string]any:
		if _, ok := n["schema"]; ok {
			if ex, ok := n["example"]; ok {
				visit(ptr+"/example", ptr+"/schema", ex)
			}
			if exs, ok := n["examples"].(map[string]any); ok {
				for k, e := range exs {
					if m, ok := e.(map[string]any); ok {
						if v, ok := m["value"]; ok {
							visit(ptr+"/examples/"+pointerToken(k), ptr+"/schema", v)
						}
					}
				}
			}
		} else if ex, ok := n["example"]; ok {
			for _, k := range schemaKeywords {
				if _, isSchema := n[k]; isSchema {
					visit(ptr+"/example", ptr, ex)
					break
				}
			}
		}
		for k, v := range n {
			if k == "example" || k == "examples" {
				continue
			}
			exampleSites(v, ptr+"/"+pointerToken(k), visit)
		}
	case []any:
		for i, v := range n {
			exampleSites(v, fmt.Sprintf("%s/%d", ptr, i), visit)
		}
	}
}

// exampleFailures validates every example of one document against its
// schema and returns how many it found and what failed.
func exampleFailures(t *testing.T, name string, raw []byte) (int, []string) {
	t.Helper()
	doc, c, base := loadDocument(t, name, raw)
	count := 0
	var failures []string
	exampleSites(doc, "", func(where, schemaPtr string, value any) {
		count++
		s, err := c.Compile(base + "#" + schemaPtr)
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s%s: compile the schema: %v", name, where, err))
			return
		}
		if err := s.Validate(value); err != nil {
			failures = append(failures, fmt.Sprintf("%s%s does not validate against its schema: %v", name, where, err))
		}
	})
	return count, failures
}

// TestEveryExampleValidates compiles the schema of every example in both
// documents and validates the example against it.
func TestEveryExampleValidates(t *testing.T) {
	t.Parallel()
	for name, raw := range documents {
		count, failures := exampleFailures(t, name, raw)
		for _, f := range failures {
			t.Error(f)
		}
		// The documents carry request, response, header and schema
		// examples; finding few means the walk above lost them.
		if count < 8 {
			t.Errorf("%s: found only %d examples", name, count)
		}
	}
	// The check itself: an instant example without its six digits fails.
	broken := bytes.Replace(consensus.OpenAPI, []byte(`"example": "2026-09-01T12:00:05.120000Z"`), []byte(`"example": "2026-09-01T12:00:05Z"`), 1)
	if _, failures := exampleFailures(t, "broken", broken); bytes.Equal(broken, consensus.OpenAPI) || len(failures) != 1 {
		t.Errorf("a wrong example was not caught: %v", failures)
	}
}

// TestDocumentsAreSelfContained: no reference leaves the document (Prism
// and the generators run offline), and each published schema copied in
// keeps its $id.
func TestDocumentsAreSelfContained(t *testing.T) {
	t.Parallel()
	ref := regexp.MustCompile(`"\$ref": "([^"]*)"`)
	for name, raw := range documents {
		for _, m := range ref.FindAllStringSubmatch(string(raw), -1) {
			if !strings.HasPrefix(m[1], "#/components/") {
				t.Errorf("%s: reference %q leaves the document", name, m[1])
			}
		}
		var doc struct {
			Components struct {
				Schemas map[string]map[string]any `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		for _, comp := range []string{"AgreementV1", "ParticipantBindingV1"} {
			s := doc.Components.Schemas[comp]
			if s == nil {
				t.Errorf("%s: components/schemas/%s is missing", name, comp)
				continue
			}
			if id, _ := s["$id"].(string); !strings.HasPrefix(id, origin+"/schemas/") {
				t.Errorf("%s: %s has $id %q", name, comp, id)
			}
		}
	}
}

// TestEmbeddedSchemasMatchPublished: the copy of a published schema inside
// openapi.json accepts and refuses the same objects as the published one.
// The instances are a valid object and mutations of each member of it.
func TestEmbeddedSchemasMatchPublished(t *testing.T) {
	t.Parallel()
	published := compileSchemas(t)
	_, c, base := loadDocument(t, "openapi.json", consensus.OpenAPI)
	valid := map[string]string{
		"AgreementV1": `{"schema":"https://consensus.md/schemas/agreement/v1","agreement_id":"3f0c2b9e-8d4a-4e61-9b7c-5a2d1e0f3c4b","revision":1,
			"title":"T","objective":"O","rules":["r"],"participants":[{"participant_id":"1b2c3d4e-5f60-4718-9a0b-c1d2e3f40516","display_name":"A","kind":"agent","required":true}],
			"decision_rule":"unanimity-of-required","deadline":"2026-12-31T00:00:00Z","locked_at":"2026-09-01T12:00:00Z","issuer":"https://consensus.md"}`,
		"ParticipantBindingV1": `{"schema":"https://consensus.md/schemas/participant-binding/v1","version":1,"agreement_id":"3f0c2b9e-8d4a-4e61-9b7c-5a2d1e0f3c4b",
			"invitation_id":"9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d","participant_id":"1b2c3d4e-5f60-4718-9a0b-c1d2e3f40516","inbox":"a@agentmail.to",
			"runtime_endpoint":null,"assurance":"recipient-email-proof-possession","revision":1,"revision_digest":"` + strings.Repeat("ab", 32) + `"}`,
	}
	valid["ConsensusLogLeafV1"] = `{"type":"consensus-log-leaf/v1","agreementId":"3f0c2b9e-8d4a-4e61-9b7c-5a2d1e0f3c4b","kind":"head","revision":1,"seq":3,
			"chainHead":"` + strings.Repeat("ab", 32) + `","digest":null,"at":"2026-09-01T12:00:05.120000Z"}`
	pub := map[string]string{"AgreementV1": "agreement/v1", "ParticipantBindingV1": "participant-binding/v1", "ConsensusLogLeafV1": "consensus-log-leaf/v1"}
	replacements := []any{nil, true, 0, 2, -1, "x", "", "2026-12-31T00:00:00.5Z", "agent", "robot", "NOT-A-UUID", []any{}, map[string]any{}}
	for comp, js := range valid {
		embedded, err := c.Compile(base + "#/components/schemas/" + comp)
		if err != nil {
			t.Fatalf("%s: %v", comp, err)
		}
		original := published[pub[comp]]
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		obj := v.(map[string]any)
		instances := []any{v}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			without := clone(obj)
			delete(without, k)
			instances = append(instances, without)
			for _, r := range replacements {
				m := clone(obj)
				m[k] = r
				instances = append(instances, m)
			}
		}
		extra := clone(obj)
		extra["extra"] = 1
		instances = append(instances, extra)
		for i, inst := range instances {
			a, b := original.Validate(inst) == nil, embedded.Validate(inst) == nil
			if a != b {
				t.Errorf("%s instance %d: published schema valid=%v, embedded copy valid=%v", comp, i, a, b)
			}
		}
		if original.Validate(v) != nil {
			t.Errorf("%s: the valid instance is refused", comp)
		}
	}
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestOperationsStateTheirCredential: every operation that takes a
// credential names the exact Authorization value in its description, since
// the security scheme alone (an API key in the Authorization header) does
// not say which scheme name precedes the token.
func TestOperationsStateTheirCredential(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"ConsensusInvite":      "`Authorization: Consensus-Invite <secret>`",
		"ConsensusSession":     "`Authorization: Consensus-Session <sessionToken>`",
		"ConsensusParticipant": "`Authorization: Consensus-Participant <participantToken>`",
		"OperatorBearer":       "`Authorization: Bearer <API key or operator token>`",
	}
	for name, raw := range documents {
		var doc struct {
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		for path, item := range doc.Paths {
			for method, rawOp := range item {
				var op struct {
					Description string                `json:"description"`
					Security    []map[string][]string `json:"security"`
					Scope       string                `json:"x-required-scope"`
				}
				if json.Unmarshal(rawOp, &op) != nil {
					continue // path-level parameters
				}
				for _, req := range op.Security {
					for scheme := range req {
						if !strings.Contains(op.Description, want[scheme]) {
							t.Errorf("%s %s %s: the description does not state %s", name, method, path, want[scheme])
						}
						// An operator route states the one scope it needs,
						// in x-required-scope and in words.
						if scheme != "OperatorBearer" {
							continue
						}
						if _, err := workspace.ParseScope(op.Scope); err != nil {
							t.Errorf("%s %s %s: x-required-scope %q: %v", name, method, path, op.Scope, err)
						} else if !strings.Contains(strings.Join(strings.Fields(op.Description), " "), "holding the scope `"+op.Scope+"`") {
							t.Errorf("%s %s %s: the description does not name the scope %s", name, method, path, op.Scope)
						}
					}
				}
			}
		}
	}
}
