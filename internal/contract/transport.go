package contract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// SkipRequestHeader, set to "1" on a request, skips validation of that
// request (for tests that send a malformed one on purpose). The transport
// removes it before the request leaves.
const SkipRequestHeader = "X-Contract-Skip-Request"

// Reporter receives each violation the transport finds. A test passes its
// testing.TB, so a violation fails the test; a program that is not a test
// (consensus-demo) passes a Recorder and checks it at the end.
type Reporter interface {
	Errorf(format string, args ...any)
}

// Recorder is a Reporter that keeps the violations instead of failing
// anything. It is safe for concurrent use; the zero value is ready.
type Recorder struct {
	mu   sync.Mutex
	msgs []string
}

// Errorf records one violation.
func (r *Recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

// Violations returns the violations recorded so far, in order.
func (r *Recorder) Violations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}

// Err is nil when nothing was recorded, else one error listing every
// violation.
func (r *Recorder) Err() error {
	var errs []error
	for _, m := range r.Violations() {
		errs = append(errs, errors.New(m))
	}
	return errors.Join(errs...)
}

// Transport wraps rt: every request sent and every response received is
// validated against the spec; a violation is reported to r (with method,
// path, status and the reason, never echoing header values or bodies that
// could hold credentials). A nil rt means http.DefaultTransport.
func (v *Validator) Transport(r Reporter, rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &transport{v: v, report: r, next: rt}
}

type transport struct {
	v      *Validator
	report Reporter
	next   http.RoundTripper
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
			tr.report.Errorf("contract: %s %s: request violates openapi.json: %s", req.Method, label, describe(err))
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
		tr.report.Errorf("contract: %s %s -> %d: response violates openapi.json: %s", req.Method, label, resp.StatusCode, describe(err))
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
