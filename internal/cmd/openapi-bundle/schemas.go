package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// schemaOrigin is the origin the sources and the published JSON Schemas are
// written with; a deployment rewrites it when serving them.
const schemaOrigin = "https://consensus.md"

// embedSchemas makes doc self-contained: every {"$ref": "<origin>/schemas/
// <name>/v<n>"} becomes a reference to components/schemas/<Name>V<n>, which
// holds a copy of schemas/<name>/v<n>.json. Tools that cannot reach the
// network (Prism offline) or resolve a reference against the document root
// (code generators) then find everything inside the document.
//
// The copy keeps its $id, so a reader can tell which published schema it
// is, and says the same thing in a form those tools take: $schema dropped
// (the document's dialect is 2020-12 already), each local #/$defs reference
// replaced by the definition it names (inside a schema with an $id such a
// reference is resolved against that $id, which tools get wrong), and a
// const or enum without a type given the type of its values (generators
// cannot otherwise pick a Go or TypeScript type). Each change keeps the
// set of valid instances the same.
func embedSchemas(doc *yaml.Node, schemasDir string) error {
	// A published schema may reference another (the record's revisions
	// hold agreements): each round embeds what the last one reached.
	embedded := map[string]bool{}
	for {
		names := map[string]bool{}
		if err := walkRefs(doc, func(ref *yaml.Node) error {
			rest, ok := strings.CutPrefix(ref.Value, schemaOrigin+"/schemas/")
			if !ok {
				return nil
			}
			name, version, ok := strings.Cut(rest, "/")
			if !ok || !schemaVersionRE.MatchString(version) {
				return fmt.Errorf("line %d: unknown schema reference %q", ref.Line, ref.Value)
			}
			if !embedded[rest] {
				names[rest] = true
			}
			ref.Value = "#/components/schemas/" + componentName(name, version)
			return nil
		}); err != nil {
			return err
		}
		if len(names) == 0 {
			return nil
		}
		schemas := child(child(doc, "components"), "schemas")
		if schemas == nil {
			return fmt.Errorf("components/schemas is missing")
		}
		sorted := make([]string, 0, len(names))
		for n := range names {
			sorted = append(sorted, n)
		}
		sort.Strings(sorted)
		for _, path := range sorted {
			name, version, _ := strings.Cut(path, "/")
			s, err := loadSchema(filepath.Join(schemasDir, name, version+".json"))
			if err != nil {
				return err
			}
			if find(schemas, componentName(name, version)) >= 0 {
				return fmt.Errorf("components/schemas/%s is defined in api/ and generated from schemas/", componentName(name, version))
			}
			schemas.Content = append(schemas.Content, scalar(componentName(name, version)), s)
			embedded[path] = true
		}
	}
}

// schemaVersionRE is the version segment of a schema URL: v1, v2, ...
var schemaVersionRE = regexp.MustCompile(`^v[1-9][0-9]*$`)

// componentName turns "participant-binding", "v2" into "ParticipantBindingV2".
func componentName(schema, version string) string {
	var b strings.Builder
	for _, part := range strings.Split(schema, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String() + strings.ToUpper(version)
}

// loadSchema reads one published schema and rewrites it as embedSchemas
// describes.
func loadSchema(path string) (*yaml.Node, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(n.Content) != 1 || n.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: a schema must be an object", path)
	}
	s := n.Content[0]
	id := child(s, "$id")
	if id == nil || !strings.HasPrefix(id.Value, schemaOrigin+"/schemas/") {
		return nil, fmt.Errorf("%s: $id must start with %s/schemas/", path, schemaOrigin)
	}
	defs := child(s, "$defs")
	remove(s, "$schema")
	remove(s, "$defs")
	if err := inlineDefs(s, defs, path, 0); err != nil {
		return nil, err
	}
	addTypes(s)
	return s, nil
}

// inlineDefs replaces every {"$ref": "#/$defs/x"} mapping under n with a
// copy of the definition x.
func inlineDefs(n, defs *yaml.Node, path string, depth int) error {
	if depth > 16 {
		return fmt.Errorf("%s: $defs nest too deeply", path)
	}
	for i, c := range n.Content {
		if c.Kind == yaml.MappingNode && len(c.Content) == 2 && c.Content[0].Value == "$ref" {
			name, ok := strings.CutPrefix(c.Content[1].Value, "#/$defs/")
			def := child(defs, name)
			if !ok || def == nil {
				return fmt.Errorf("%s: unsupported reference %q", path, c.Content[1].Value)
			}
			cp := deepCopy(def)
			if err := inlineDefs(cp, defs, path, depth+1); err != nil {
				return err
			}
			n.Content[i] = cp
			continue
		}
		if err := inlineDefs(c, defs, path, depth); err != nil {
			return err
		}
	}
	return nil
}

// addTypes gives a schema with const or enum, and no type, the JSON type
// its values share.
func addTypes(n *yaml.Node) {
	if n.Kind == yaml.MappingNode && child(n, "type") == nil {
		var values []*yaml.Node
		if c := child(n, "const"); c != nil {
			values = []*yaml.Node{c}
		} else if e := child(n, "enum"); e != nil && e.Kind == yaml.SequenceNode {
			values = e.Content
		}
		if t := sharedType(values); t != "" {
			n.Content = append([]*yaml.Node{scalar("type"), scalar(t)}, n.Content...)
		}
	}
	for _, c := range n.Content {
		addTypes(c)
	}
}

func sharedType(values []*yaml.Node) string {
	t := ""
	for _, v := range values {
		var vt string
		switch v.ShortTag() {
		case "!!str":
			vt = "string"
		case "!!int":
			vt = "integer"
		case "!!bool":
			vt = "boolean"
		default:
			return ""
		}
		if t != "" && t != vt {
			return ""
		}
		t = vt
	}
	return t
}

// walkRefs calls f with the value node of every "$ref" key under n.
func walkRefs(n *yaml.Node, f func(ref *yaml.Node) error) error {
	if n.Kind == yaml.MappingNode {
		for i := 0; i < len(n.Content); i += 2 {
			if n.Content[i].Value == "$ref" && n.Content[i+1].Kind == yaml.ScalarNode {
				if err := f(n.Content[i+1]); err != nil {
					return err
				}
			}
		}
	}
	for _, c := range n.Content {
		if err := walkRefs(c, f); err != nil {
			return err
		}
	}
	return nil
}

// child returns the value of key in mapping m, or nil.
func child(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	if i := find(m, key); i >= 0 {
		return m.Content[i+1]
	}
	return nil
}

// remove deletes key from mapping m.
func remove(m *yaml.Node, key string) {
	if i := find(m, key); i >= 0 {
		m.Content = append(m.Content[:i], m.Content[i+2:]...)
	}
}

func scalar(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
}

func deepCopy(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	cp := *n
	if n.Kind == yaml.AliasNode {
		return deepCopy(n.Alias)
	}
	cp.Content = make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		cp.Content[i] = deepCopy(c)
	}
	return &cp
}
