package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	consensus "github.com/consensus-md/consensus"
)

// inlineSchemas replaces every {"$ref": "<origin>/schemas/<name>/v1"} with
// the embedded schema, its local #/$defs references substituted, so that
// kin-openapi sees one self-contained document.
func inlineSchemas(node any, origins []string) (any, error) {
	return rewrite(node, func(obj map[string]any) (any, bool, error) {
		ref, ok := obj["$ref"].(string)
		if !ok || len(obj) != 1 {
			return nil, false, nil
		}
		for _, o := range origins {
			if name, ok := strings.CutPrefix(ref, o+"/schemas/"); ok {
				s, err := embeddedSchema(strings.TrimSuffix(name, "/v1"))
				return s, true, err
			}
		}
		return nil, false, nil
	})
}

func embeddedSchema(name string) (any, error) {
	b, err := fs.ReadFile(consensus.Schemas, "schemas/"+name+"/v1.json")
	if err != nil {
		return nil, fmt.Errorf("contract: openapi.json refers to an unknown schema %q", name)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("contract: schema %s: %w", name, err)
	}
	defs, _ := s["$defs"].(map[string]any)
	delete(s, "$defs")
	delete(s, "$schema")
	delete(s, "$id")
	return substituteDefs(s, defs, 0)
}

// substituteDefs replaces each {"$ref": "#/$defs/<name>"} with the
// definition itself; depth stops a definition that refers to itself.
func substituteDefs(node any, defs map[string]any, depth int) (any, error) {
	if depth > 32 {
		return nil, errors.New("contract: $defs nest too deeply (a cycle?)")
	}
	return rewrite(node, func(obj map[string]any) (any, bool, error) {
		ref, ok := obj["$ref"].(string)
		if !ok {
			return nil, false, nil
		}
		name, local := strings.CutPrefix(ref, "#/$defs/")
		def, found := defs[name]
		if !local || !found {
			return nil, true, fmt.Errorf("contract: unsupported reference %q in a schema", ref)
		}
		s, err := substituteDefs(def, defs, depth+1)
		return s, true, err
	})
}

// rewrite copies a decoded JSON tree. Each object is first offered to
// replace: when it reports done, its result (or error) stands for the
// object; otherwise the object's members are copied, rewritten in turn.
func rewrite(node any, replace func(obj map[string]any) (any, bool, error)) (any, error) {
	switch n := node.(type) {
	case map[string]any:
		if r, done, err := replace(n); done || err != nil {
			return r, err
		}
		out := make(map[string]any, len(n))
		for k, val := range n {
			r, err := rewrite(val, replace)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(n))
		for i, val := range n {
			r, err := rewrite(val, replace)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return node, nil
}
