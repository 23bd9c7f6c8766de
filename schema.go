package consensus

import (
	"bytes"
	"fmt"
	"io/fs"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// DocumentOrigin is the origin every embedded document is written with:
// the schemas' $id values, OpenAPI's server URL, the web pages. A
// deployment at another origin replaces it when serving them.
const DocumentOrigin = "https://consensus.md"

// CompileSchemas compiles the embedded schemas with the given $ids (each
// DocumentOrigin + "/schemas/<name>/v1") as JSON Schema 2020-12, with formats
// asserted, and returns them by $id. A $ref may reach only the schemas
// named: the compiler loads nothing else, so compiling never touches the
// network.
func CompileSchemas(ids ...string) (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	c.AssertFormat()
	for _, id := range ids {
		name, ok := strings.CutPrefix(id, DocumentOrigin+"/")
		if !ok {
			return nil, fmt.Errorf("consensus: schema %s: not an embedded schema's $id", id)
		}
		b, err := fs.ReadFile(Schemas, name+".json")
		if err != nil {
			return nil, fmt.Errorf("consensus: schema %s: %w", id, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("consensus: schema %s: %w", id, err)
		}
		if err := c.AddResource(id, doc); err != nil {
			return nil, fmt.Errorf("consensus: schema %s: %w", id, err)
		}
	}
	out := make(map[string]*jsonschema.Schema, len(ids))
	for _, id := range ids {
		s, err := c.Compile(id)
		if err != nil {
			return nil, err
		}
		out[id] = s
	}
	return out, nil
}

// refuseLoader is the schema loader that loads nothing.
type refuseLoader struct{}

func (refuseLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("consensus: schema loader: refusing to load %s", u)
}
