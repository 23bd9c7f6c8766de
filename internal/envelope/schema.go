package envelope

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/consensus-md/consensus"
)

// schemaURL is the $id of the embedded schema, whatever origin issued the
// envelope.
const schemaURL = consensus.DocumentOrigin + SchemaPath

// compiledSchema is the envelope schema, compiled once from the embedded
// copy. Loading any other URL is refused, so compiling never touches the
// network.
var compiledSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	s, err := consensus.CompileSchemas(schemaURL)
	if err != nil {
		return nil, err
	}
	return s[schemaURL], nil
})

// describeSchemaError summarizes a validation failure from the schema side:
// instance locations (made of schema property names) and keywords. The
// library's own messages quote instance values, which could be the secret or
// the proof, so they are not used.
func describeSchemaError(err error) string {
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return "envelope does not match the v1 schema"
	}
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(parts) >= 5 {
			return
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		loc := "/" + strings.Join(e.InstanceLocation, "/")
		kw := ""
		if path := e.ErrorKind.KeywordPath(); len(path) > 0 {
			kw = path[len(path)-1]
		}
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			kw = "required " + strings.Join(k.Missing, ", ")
		case *kind.AdditionalProperties:
			kw = fmt.Sprintf("%d unknown field(s)", len(k.Properties))
		}
		parts = append(parts, loc+": "+kw)
	}
	walk(verr)
	if len(parts) == 0 {
		return "envelope does not match the v1 schema"
	}
	return "envelope does not match the v1 schema: " + strings.Join(parts, "; ")
}
