package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// Body limits by route.
const (
	limitExchange = 1024
	limitClaim    = 4096
	limitEvents   = 20 * 1024
	limitAdmin    = 256 * 1024
)

func tooLarge(limit int64) *Error {
	return &Error{Code: "payload-too-large", Detail: fmt.Sprintf("the body must be at most %d bytes", limit)}
}

// readBody reads at most limit bytes; one byte more is payload-too-large.
// The limit applies before any parsing.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" && r.ContentLength != 0 {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, &Error{Code: "unsupported-media-type", Detail: "Content-Type must be application/json"}
		}
	}
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, malformed("the request body could not be read")
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(limit)
	}
	return b, nil
}

// decodeStrict decodes one JSON object into dst, refusing unknown fields,
// wrong types and trailing data. Messages name the field, never its value.
func decodeStrict(b []byte, dst any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return malformed("a JSON object body is required")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			return malformed(fmt.Sprintf("field %q has the wrong type (want %s)", te.Field, te.Type))
		case errors.As(err, &se):
			return malformed("the body is not valid JSON")
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return malformed("unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field "))
		default:
			return malformed("the body must be one JSON object")
		}
	}
	if dec.More() {
		return malformed("the body must hold exactly one JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return malformed("the body must hold exactly one JSON object")
	}
	return nil
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
