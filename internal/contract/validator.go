package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	consensus "github.com/consensus-md/consensus"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// Validator holds the loaded spec and its router.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
	// fallback answers requests that match no operation: 404 for an
	// unknown path, 405 for an undeclared method.
	notFound, methodNotAllowed *openapi3.Operation
}

// Load parses openapi.json (the embedded bytes) and returns a validator for
// a server at origin (for example http://127.0.0.1:PORT). The spec's
// references to the public JSON Schemas are resolved from the embedded
// schemas/ tree, never fetched. Routes are matched by path only, so the
// validator works whatever host and port a test server listens on.
func Load(specJSON []byte, origin string) (*Validator, error) {
	register()
	var spec map[string]any
	if err := json.Unmarshal(specJSON, &spec); err != nil {
		return nil, fmt.Errorf("contract: parse openapi.json: %w", err)
	}
	origins := []string{consensus.DocumentOrigin}
	if o := strings.TrimRight(origin, "/"); o != "" && o != consensus.DocumentOrigin {
		origins = append(origins, o)
	}
	inlined, err := inlineSchemas(spec, origins)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(inlined)
	if err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(b)
	if err != nil {
		return nil, fmt.Errorf("contract: load openapi.json: %w", err)
	}
	// Path-only matching: the documented server is the public origin,
	// tests run on loopback ports.
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("contract: %w", err)
	}
	v := &Validator{doc: doc, router: router}
	v.notFound, err = v.fallback(http.StatusNotFound, "NotFound")
	if err != nil {
		return nil, err
	}
	v.methodNotAllowed, err = v.fallback(http.StatusMethodNotAllowed, "MethodNotAllowed")
	if err != nil {
		return nil, err
	}
	return v, nil
}

// pathHasOtherMethods reports whether the path is documented for some
// other method. The legacy router calls a templated path with a wrong method
// "not found"; the server answers 405 there, so the check is made here.
func (v *Validator) pathHasOtherMethods(req *http.Request) bool {
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == req.Method {
			continue
		}
		probe := req.Clone(context.Background())
		probe.Method = m
		if _, _, err := v.router.FindRoute(probe); err == nil {
			return true
		}
	}
	return false
}

// fallback is an operation answering only with the component response name
// (and the 400 and 500 any route can give).
func (v *Validator) fallback(status int, name string) (*openapi3.Operation, error) {
	rs := v.doc.Components.Responses
	want, bad, internal := rs[name], rs["BadRequest"], rs["Internal"]
	if want == nil || bad == nil || internal == nil {
		return nil, fmt.Errorf("contract: openapi.json lacks components/responses/%s, BadRequest or Internal", name)
	}
	return &openapi3.Operation{Responses: openapi3.NewResponses(
		openapi3.WithStatus(status, want), openapi3.WithStatus(400, bad), openapi3.WithStatus(500, internal),
	)}, nil
}

// options: authentication is tested elsewhere; nothing is written into
// bodies; undocumented statuses fail; schema messages never hold values.
func (v *Validator) options() *openapi3filter.Options {
	o := &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		SkipSettingDefaults:   true,
		IncludeResponseStatus: true,
		MultiError:            false,
	}
	o.WithCustomSchemaErrorFunc(func(err *openapi3.SchemaError) string {
		return "value at /" + strings.Join(err.JSONPointer(), "/") + " fails " + err.SchemaField
	})
	return o
}
