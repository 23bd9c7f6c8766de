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
// route's stated limit, counted on the body as sent less what optional
// escapes add to its strings (see countedSize). Wire is the most the route
// reads off the connection, enforced before any parsing; it is at least
// the longest encoding of the longest legal body (every character a \u
// escape, every astral character a surrogate pair, member names included),
// so no legal body is refused for the way its strings were escaped.
type bodyLimit struct {
	Bytes int64
	Wire  int64
}

// Body limits by route. The guide fixes exchange (1,024) and claim (4,096);
// TestBodyLimitsAdmitLongestLegalBodies builds the longest legal body of
// each route and checks it fits.
var (
	// Exchange: the longest legal body, a 47-character secret with every
	// character and the member name escaped, is about 330 bytes.
	limitExchange = bodyLimit{Bytes: 1024, Wire: 1024}
	// Claim: escaped, a 2,048-character runtimeEndpoint alone is 12,288
	// bytes; counted, the longest legal claim is under 2,500.
	limitClaim = bodyLimit{Bytes: 4096, Wire: 16 << 10}
	// Events: 4,000 astral characters as surrogate-pair escapes are 48,000
	// bytes; 64 KiB holds them with the other members.
	limitEvents = bodyLimit{Bytes: 64 << 10, Wire: 64 << 10}
	// Operator create (and amend, whose fields are the same or fewer): every
	// field at its maximum, fully escaped, is about 880 KB (50 rules of
	// 1,000 astral characters are 600,000 bytes alone).
	limitCreate = bodyLimit{Bytes: 1 << 20, Wire: 1 << 20}
	// An API key: a 100-character name of astral characters as
	// surrogate-pair escapes is 1,200 bytes, every scope and an expiry add
	// under 300; counted, the longest legal body is under 1,000.
	limitKey = bodyLimit{Bytes: 4096, Wire: 16 << 10}
	// Revoke and resend take no body; an empty object is tolerated.
	limitNoBody = bodyLimit{Bytes: 1024, Wire: 1024}
)

func tooLarge(limit bodyLimit) *Error {
	if limit.Wire > limit.Bytes {
		return &Error{Code: ProblemPayloadTooLarge, Detail: fmt.Sprintf("the body must be at most %d bytes, counting each string as its shortest JSON escaping, and at most %d bytes as sent", limit.Bytes, limit.Wire)}
	}
	return &Error{Code: ProblemPayloadTooLarge, Detail: fmt.Sprintf("the body must be at most %d bytes", limit.Bytes)}
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
	b, err := readAtMost(r, limit.Wire+1)
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

// readAtMost reads r's body, up to n bytes. A body of a stated length is
// read into a buffer of that length (net/http ends it there), any other
// as it comes.
func readAtMost(r *http.Request, n int64) ([]byte, error) {
	if r.ContentLength < 0 || r.ContentLength >= n {
		return io.ReadAll(io.LimitReader(r.Body, n))
	}
	b := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, b); err != nil {
		return nil, err
	}
	return b, nil
}

// checkContentType accepts application/json with no parameter but a
// UTF-8 charset. JSON exchanged between systems is UTF-8 (RFC 8259), and a
// body sent as a form or as text was not meant as this JSON.
func checkContentType(r *http.Request) error {
	values := r.Header.Values("Content-Type")
	if len(values) == 1 && values[0] == "application/json" {
		return nil // the usual spelling, without parsing it
	}
	unsupported := &Error{Code: ProblemUnsupportedMediaType, Detail: "send the body with Content-Type: application/json (charset, if given, utf-8)"}
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

// noBody is for the routes that take no body: nothing, or an empty JSON
// object, which some clients send with every POST.
func noBody(r *http.Request) error {
	b, err := readBody(r, limitNoBody)
	if err != nil || b == nil {
		return err
	}
	var empty struct{}
	return decodeObject(b, limitNoBody, &empty)
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
