package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// bodyLimit is how much of a request body one route takes. Bytes is the
// route's stated limit, counted on the body in its shortest JSON form (see
// shortestForm): optional \u escapes and insignificant whitespace do not
// count. Wire is the most the route reads off the connection, enforced
// before any parsing; it is at least the longest encoding of the longest
// legal body (every character a \u escape, every astral character a
// surrogate pair, member names included), so no legal body is refused for
// the way it was encoded.
type bodyLimit struct {
	Bytes int64
	Wire  int64
}

// Body limits by route.
var (
	limitExchange = bodyLimit{Bytes: 1024, Wire: 1024}
	limitClaim    = bodyLimit{Bytes: 4096, Wire: 4096}
	limitEvents   = bodyLimit{Bytes: 20 * 1024, Wire: 20 * 1024}
	limitCreate   = bodyLimit{Bytes: 256 * 1024, Wire: 256 * 1024}
)

func tooLarge(limit bodyLimit) *Error {
	if limit.Wire > limit.Bytes {
		return &Error{Code: "payload-too-large", Detail: fmt.Sprintf("the body must be at most %d bytes in its shortest JSON form and at most %d bytes as sent", limit.Bytes, limit.Wire)}
	}
	return &Error{Code: "payload-too-large", Detail: fmt.Sprintf("the body must be at most %d bytes", limit.Bytes)}
}

// readBody reads the request body, at most limit.Wire bytes; a longer one
// is payload-too-large before anything is parsed. A body (any byte at all)
// must be declared application/json, optionally with charset=utf-8;
// anything else, a missing Content-Type included, is
// unsupported-media-type. An absent body returns nil and no error.
func readBody(r *http.Request, limit bodyLimit) ([]byte, error) {
	if r.ContentLength > limit.Wire {
		if err := checkContentType(r); err != nil {
			return nil, err
		}
		return nil, tooLarge(limit)
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit.Wire+1))
	if err != nil {
		return nil, malformed("the request body could not be read")
	}
	if len(b) == 0 {
		return nil, nil
	}
	if err := checkContentType(r); err != nil {
		return nil, err
	}
	if int64(len(b)) > limit.Wire {
		return nil, tooLarge(limit)
	}
	return b, nil
}

// checkContentType accepts application/json with no parameter but a
// UTF-8 charset. JSON exchanged between systems is UTF-8 (RFC 8259), and a
// body sent as a form or as text was not meant as this JSON.
func checkContentType(r *http.Request) error {
	unsupported := &Error{Code: "unsupported-media-type", Detail: "send the body with Content-Type: application/json (charset, if given, utf-8)"}
	values := r.Header.Values("Content-Type")
	if len(values) != 1 {
		return unsupported
	}
	mt, params, err := mime.ParseMediaType(values[0])
	if err != nil || mt != "application/json" {
		return unsupported
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return unsupported
		}
	}
	return nil
}

// decodeBody reads and strictly decodes a required JSON object body into
// a fresh T (see readBody and decodeObject). On error the zero T is
// returned, so a partly decoded value is never used.
func decodeBody[T any](r *http.Request, limit bodyLimit) (T, error) {
	var zero, v T
	b, err := readBody(r, limit)
	if err != nil {
		return zero, err
	}
	if err := decodeObject(b, limit, &v); err != nil {
		return zero, err
	}
	return v, nil
}

// writeJSON writes v as JSON with HTML characters unescaped.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, "encoding failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
