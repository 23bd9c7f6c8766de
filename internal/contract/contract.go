package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/mail"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	consensus "github.com/consensus-md/consensus"
)

// SkipRequestHeader, set to "1" on a request, skips validation of that
// request (for tests that send a malformed one on purpose). The transport
// removes it before the request leaves.
const SkipRequestHeader = "X-Contract-Skip-Request"

// specOrigin is the origin the committed documents are written with.
const specOrigin = "https://consensus.md"

// Validator holds the loaded spec and its router.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
	// fallback answers requests that match no operation: 404 for an
	// unknown path, 405 for an undeclared method.
	notFound, methodNotAllowed *openapi3.Operation
}

var registerOnce sync.Once

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// register defines the string formats the spec uses (kin-openapi checks
// none of them until they are defined) and decoders for the media types it
// serves. Both registries are global in kin-openapi, hence once.
func register() {
	registerOnce.Do(func() {
		openapi3.DefineStringFormatValidator("uuid", openapi3.NewCallbackValidator(func(s string) error {
			if !uuidRE.MatchString(s) {
				return errors.New("not a UUID")
			}
			return nil
		}))
		openapi3.DefineStringFormatValidator("email", openapi3.NewCallbackValidator(func(s string) error {
			if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
				return errors.New("not an email address")
			}
			return nil
		}))
		openapi3.DefineStringFormatValidator("date-time", openapi3.NewCallbackValidator(func(s string) error {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				return errors.New("not an RFC 3339 date-time")
			}
			return nil
		}))
		openapi3.DefineStringFormatValidator("uri", openapi3.NewCallbackValidator(func(s string) error {
			if u, err := url.Parse(s); err != nil || !u.IsAbs() {
				return errors.New("not an absolute URI")
			}
			return nil
		}))
		text := func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			b, err := io.ReadAll(body)
			return string(b), err
		}
		openapi3filter.RegisterBodyDecoder("text/markdown", text)
		openapi3filter.RegisterBodyDecoder("text/html", text)
		openapi3filter.RegisterBodyDecoder("application/linkset+json", openapi3filter.JSONBodyDecoder)
		openapi3filter.RegisterBodyDecoder("application/schema+json", openapi3filter.JSONBodyDecoder)
	})
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
	origins := []string{specOrigin}
	if o := strings.TrimRight(origin, "/"); o != "" && o != specOrigin {
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

// inlineSchemas replaces every {"$ref": "<origin>/schemas/<name>/v1"} with
// the embedded schema, its local #/$defs references substituted, so that
// kin-openapi sees one self-contained document.
func inlineSchemas(node any, origins []string) (any, error) {
	switch n := node.(type) {
	case map[string]any:
		if ref, ok := n["$ref"].(string); ok && len(n) == 1 {
			for _, o := range origins {
				if name, ok := strings.CutPrefix(ref, o+"/schemas/"); ok {
					return embeddedSchema(strings.TrimSuffix(name, "/v1"))
				}
			}
		}
		out := make(map[string]any, len(n))
		for k, val := range n {
			r, err := inlineSchemas(val, origins)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(n))
		for i, val := range n {
			r, err := inlineSchemas(val, origins)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return node, nil
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

func substituteDefs(node any, defs map[string]any, depth int) (any, error) {
	if depth > 32 {
		return nil, errors.New("contract: $defs nest too deeply (a cycle?)")
	}
	switch n := node.(type) {
	case map[string]any:
		if ref, ok := n["$ref"].(string); ok {
			name, local := strings.CutPrefix(ref, "#/$defs/")
			def, found := defs[name]
			if !local || !found {
				return nil, fmt.Errorf("contract: unsupported reference %q in a schema", ref)
			}
			return substituteDefs(def, defs, depth+1)
		}
		out := make(map[string]any, len(n))
		for k, val := range n {
			r, err := substituteDefs(val, defs, depth)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(n))
		for i, val := range n {
			r, err := substituteDefs(val, defs, depth)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return node, nil
}

// Transport wraps rt: every request sent and every response received is
// validated against the spec; a violation fails t (t.Errorf with method,
// path, status and the reason, never echoing header values or bodies that
// could hold credentials). A nil rt means http.DefaultTransport.
func (v *Validator) Transport(t testing.TB, rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &transport{v: v, t: t, next: rt}
}

type transport struct {
	v    *Validator
	t    testing.TB
	next http.RoundTripper
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	skipRequest := req.Header.Get(SkipRequestHeader) == "1"
	if req.Header.Get(SkipRequestHeader) != "" {
		req = req.Clone(req.Context())
		req.Header.Del(SkipRequestHeader)
	}
	var reqBody []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}

	route, params, findErr := tr.v.router.FindRoute(req)
	label := req.URL.Path
	if findErr == nil {
		label = route.Path
	}
	opts := tr.v.options()
	if findErr == nil && !skipRequest {
		in := &openapi3filter.RequestValidationInput{Request: withBody(req, reqBody), PathParams: params, Route: route, Options: opts}
		if err := openapi3filter.ValidateRequest(req.Context(), in); err != nil {
			tr.t.Errorf("contract: %s %s: request violates openapi.json: %s", req.Method, label, describe(err))
		}
	}

	resp, err := tr.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	respBody, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	if err != nil {
		return resp, nil
	}

	if findErr != nil {
		var op *openapi3.Operation
		var re *routers.RouteError
		if errors.As(findErr, &re) && re.Reason == routers.ErrMethodNotAllowed.Error() || tr.v.pathHasOtherMethods(req) {
			op = tr.v.methodNotAllowed
		} else {
			op = tr.v.notFound
		}
		route = &routers.Route{Spec: tr.v.doc, Path: req.URL.Path, Method: req.Method, Operation: op}
		params = nil
	}
	// kin-openapi skips HEAD responses entirely: check their status and
	// headers as those of the matching GET-shaped answer, without a body.
	checked := req
	respOpts := *opts
	if req.Method == http.MethodHead {
		checked = req.Clone(req.Context())
		checked.Method = http.MethodGet
		respOpts.ExcludeResponseBody = true
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: checked, PathParams: params, Route: route, Options: &respOpts},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &respOpts,
	}
	in.SetBodyBytes(respBody)
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		tr.t.Errorf("contract: %s %s -> %d: response violates openapi.json: %s", req.Method, label, resp.StatusCode, describe(err))
	}
	return resp, nil
}

func withBody(req *http.Request, body []byte) *http.Request {
	r := req.Clone(context.WithoutCancel(req.Context()))
	if body == nil {
		r.Body = http.NoBody
	} else {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	return r
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

// describe renders an error from kin-openapi without any value: reasons,
// JSON locations, keywords and property names only.
func describe(err error) string {
	var parts []string
	collect(err, &parts)
	return strings.Join(parts, "; ")
}

func collect(err error, out *[]string) {
	switch e := err.(type) {
	case nil:
	case *openapi3filter.RequestError:
		prefix := e.Reason
		if prefix == "" {
			prefix = "invalid"
		}
		if e.Parameter != nil {
			prefix = fmt.Sprintf("%s parameter %q: %s", e.Parameter.In, e.Parameter.Name, e.Reason)
		} else if e.RequestBody != nil {
			prefix = "request body: " + e.Reason
		}
		if prefix == "" {
			prefix = "request"
		}
		*out = append(*out, prefix)
		collect(e.Err, out)
	case *openapi3filter.ResponseError:
		*out = append(*out, e.Reason)
		collect(e.Err, out)
	case *openapi3filter.SecurityRequirementsError:
		*out = append(*out, "security requirements not met")
	case *openapi3.SchemaError:
		if e.Origin != nil {
			collect(e.Origin, out)
			return
		}
		var verr *jsonschema.ValidationError
		if errors.As(e, &verr) {
			collectValidation(verr, out)
			return
		}
		*out = append(*out, "at /"+strings.Join(e.JSONPointer(), "/")+": fails "+e.SchemaField)
	case openapi3.MultiError:
		for _, x := range e {
			collect(x, out)
		}
	case *routers.RouteError:
		*out = append(*out, e.Reason)
	case interface{ Unwrap() []error }:
		for _, x := range e.Unwrap() {
			collect(x, out)
		}
	case interface{ Unwrap() error }:
		if inner := e.Unwrap(); inner != nil {
			collect(inner, out)
		} else {
			*out = append(*out, fmt.Sprintf("(detail withheld: %T)", err))
		}
	default:
		*out = append(*out, fmt.Sprintf("(detail withheld: %T)", err))
	}
}

func collectValidation(verr *jsonschema.ValidationError, out *[]string) {
	if len(verr.Causes) > 0 {
		for _, c := range verr.Causes {
			collectValidation(c, out)
		}
		return
	}
	at := "/" + strings.Join(verr.InstanceLocation, "/")
	keyword := "schema"
	if kp := verr.ErrorKind.KeywordPath(); len(kp) > 0 {
		keyword = kp[len(kp)-1]
	}
	msg := "at " + at + ": fails " + keyword
	switch k := verr.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		msg += fmt.Sprintf(" (undocumented %q)", k.Properties)
	case *kind.Required:
		msg += fmt.Sprintf(" (missing %q)", k.Missing)
	case *kind.Type:
		msg += fmt.Sprintf(" (got %s, want %s)", k.Got, strings.Join(k.Want, " or "))
	}
	*out = append(*out, msg)
}
