package record

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/consensus-md/consensus"
)

// The embedded schemas a record is checked against, by their $id.
const (
	recordSchemaID    = consensus.DocumentOrigin + "/schemas/consensus-record/v1"
	agreementSchemaID = consensus.DocumentOrigin + "/schemas/agreement/v1"
)

// compiled holds the record and agreement schemas, compiled once from the
// embedded copies; no other URL is ever loaded.
var compiled = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	return consensus.CompileSchemas(recordSchemaID, agreementSchemaID)
})

// validate checks raw against the schema id and returns one line per leaf
// error (at most eight), each naming the location in the document.
func validate(id string, raw []byte) []string {
	schemas, err := compiled()
	if err != nil {
		return []string{"the embedded schema does not compile: " + err.Error()}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	err = schemas[id].Validate(doc)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return []string{err.Error()}
	}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(out) >= 8 {
			return
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		out = append(out, fmt.Sprintf("at /%s: %s", strings.Join(e.InstanceLocation, "/"), e.ErrorKind))
	}
	walk(verr)
	return out
}
