// Command openapi-bundle merges the OpenAPI source fragments under api/ into
// one JSON document: api/openapi.yaml first, then every other api/*.yaml in
// name order. Each fragment is part of one document (paths, components), so
// mappings merge key by key and a key defined twice is an error. The JSON
// Schemas the sources reference by their public URL are copied in as
// components (see embedSchemas), so the document needs nothing outside
// itself. With -agent it also writes the invited participant's subset (see
// agentDocument). Keys keep their source order and the output is indented
// JSON with a final newline, so regenerating an unchanged source gives
// identical bytes.
//
// Usage: go run ./internal/cmd/openapi-bundle [-o openapi.json] [-agent openapi-agent.json] [-schemas schemas] [api-dir]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

func main() {
	out := flag.String("o", "openapi.json", "output file")
	agentOut := flag.String("agent", "", "also write the invited participant's subset to this file")
	schemasDir := flag.String("schemas", "schemas", "directory of the published JSON Schemas")
	flag.Parse()
	dir := "api"
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	if err := run(dir, *schemasDir, *out, *agentOut); err != nil {
		fmt.Fprintln(os.Stderr, "openapi-bundle:", err)
		os.Exit(1)
	}
}

func run(dir, schemasDir, out, agentOut string) error {
	doc, err := bundle(dir, schemasDir)
	if err != nil {
		return err
	}
	b, err := encode(doc)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return err
	}
	if agentOut == "" {
		return nil
	}
	agent, err := agentDocument(doc)
	if err != nil {
		return fmt.Errorf("agent document: %w", err)
	}
	if b, err = encode(agent); err != nil {
		return err
	}
	return os.WriteFile(agentOut, b, 0o644)
}

// encode writes doc as indented JSON with a final newline.
func encode(doc *yaml.Node) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeJSON(&buf, doc, ""); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	if !json.Valid(buf.Bytes()) {
		return nil, errors.New("produced invalid JSON")
	}
	return buf.Bytes(), nil
}

func bundle(dir, schemasDir string) (*yaml.Node, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	root := filepath.Join(dir, "openapi.yaml")
	sort.Slice(files, func(i, j int) bool {
		if (files[i] == root) != (files[j] == root) {
			return files[i] == root
		}
		return files[i] < files[j]
	})
	if len(files) == 0 || files[0] != root {
		return nil, fmt.Errorf("%s is missing", root)
	}
	var doc *yaml.Node
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var n yaml.Node
		if err := yaml.Unmarshal(b, &n); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if len(n.Content) != 1 || n.Content[0].Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s: the document must be a mapping", f)
		}
		if doc == nil {
			doc = n.Content[0]
			continue
		}
		if err := merge(doc, n.Content[0], f); err != nil {
			return nil, err
		}
	}
	if err := embedSchemas(doc, schemasDir); err != nil {
		return nil, err
	}
	return doc, nil
}

// merge adds src's keys to dst; both are mappings. Shared keys must both
// hold mappings, merged in turn.
func merge(dst, src *yaml.Node, where string) error {
	for i := 0; i < len(src.Content); i += 2 {
		k, v := src.Content[i], src.Content[i+1]
		j := find(dst, k.Value)
		if j < 0 {
			dst.Content = append(dst.Content, k, v)
			continue
		}
		existing := dst.Content[j+1]
		if existing.Kind != yaml.MappingNode || v.Kind != yaml.MappingNode {
			return fmt.Errorf("%s:%d: %q is already defined", where, k.Line, k.Value)
		}
		if err := merge(existing, v, where); err != nil {
			return err
		}
	}
	return nil
}

func find(m *yaml.Node, key string) int {
	for i := 0; i < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i
		}
	}
	return -1
}

func writeJSON(buf *bytes.Buffer, n *yaml.Node, indent string) error {
	inner := indent + "  "
	switch n.Kind {
	case yaml.AliasNode:
		return writeJSON(buf, n.Alias, indent)
	case yaml.MappingNode:
		if len(n.Content) == 0 {
			buf.WriteString("{}")
			return nil
		}
		buf.WriteString("{\n")
		seen := map[string]bool{}
		for i := 0; i < len(n.Content); i += 2 {
			k := n.Content[i]
			if seen[k.Value] {
				return fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			seen[k.Value] = true
			buf.WriteString(inner)
			writeString(buf, k.Value)
			buf.WriteString(": ")
			if err := writeJSON(buf, n.Content[i+1], inner); err != nil {
				return err
			}
			if i+2 < len(n.Content) {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
		}
		buf.WriteString(indent + "}")
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			buf.WriteString("[]")
			return nil
		}
		buf.WriteString("[\n")
		for i, c := range n.Content {
			buf.WriteString(inner)
			if err := writeJSON(buf, c, inner); err != nil {
				return err
			}
			if i+1 < len(n.Content) {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
		}
		buf.WriteString(indent + "]")
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str", "!!binary", "!!timestamp":
			writeString(buf, n.Value)
		case "!!null":
			buf.WriteString("null")
		case "!!bool":
			v, err := strconv.ParseBool(strings.ToLower(n.Value))
			if err != nil {
				return fmt.Errorf("line %d: bad boolean %q", n.Line, n.Value)
			}
			buf.WriteString(strconv.FormatBool(v))
		case "!!int":
			v, err := strconv.ParseInt(n.Value, 0, 64)
			if err != nil {
				return fmt.Errorf("line %d: bad integer %q", n.Line, n.Value)
			}
			buf.WriteString(strconv.FormatInt(v, 10))
		case "!!float":
			return fmt.Errorf("line %d: floats are not used in the contract (%q); quote it if it is a string", n.Line, n.Value)
		default:
			return fmt.Errorf("line %d: unsupported tag %s", n.Line, n.ShortTag())
		}
	default:
		return fmt.Errorf("line %d: unsupported node", n.Line)
	}
	return nil
}

// writeString writes s as a JSON string without HTML escaping.
func writeString(buf *bytes.Buffer, s string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	buf.Write(bytes.TrimRight(b.Bytes(), "\n"))
}
