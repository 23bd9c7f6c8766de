// Package contract checks HTTP traffic against the published openapi.json.
//
// Load builds a Validator from the embedded spec; Validator.Transport wraps
// an http.RoundTripper so that every request a test sends and every response
// it receives is validated: the route must be documented, request parameters
// and bodies must match, and the response's status, headers, content type and
// body must be ones the spec lists for that operation (response objects are
// closed with additionalProperties: false, so an undocumented field fails).
// A path the spec does not list must be answered with the documented 404
// problem, and a method a listed path does not declare with the 405 problem
// and its Allow header.
//
// A test that sends a deliberately invalid request sets the request header
// X-Contract-Skip-Request: 1 (SkipRequestHeader). The transport removes it
// before sending and skips request validation only; the response is still
// validated.
//
// Failures are reported to a Reporter (a test's testing.TB, or a Recorder
// that keeps them for a program such as consensus-demo) naming the method,
// the route, the status and the reason. A reason names JSON locations,
// schema keywords, property and header names, never a value, so no
// credential in a header or body can reach the test log.
package contract
