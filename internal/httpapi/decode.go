package httpapi

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/consensus-md/consensus/internal/strictjson"
)

// Request bodies are decoded by strictjson, not encoding/json:
// encoding/json resolves an ambiguous document silently (the last of two
// duplicate members wins, "ACTION" or "ſecret" fill "action" or "secret",
// invalid UTF-8 and lone surrogates become U+FFFD), so two readers of one
// body could see two different commands. Here a body is one unambiguous
// JSON object or it is refused, and the refusal names the member at fault,
// never a value (which may be a credential).

// memberNames are the names of every member of every request body. Error
// messages show a name from a body only when it is one of these (or folds
// to one): any other name is the client's text and could be a credential
// pasted in the wrong place.
var memberNames = []string{
	"secret", "emailProof", "inbox", "runtimeEndpoint", "action", "body", "revision", "digest",
	"title", "objective", "rules", "deadline", "participants", "displayName", "kind", "email", "required",
}

// decodeObject decodes b, one JSON object, into dst. It refuses, with an
// invalid-request *Error naming the member at fault: anything but an
// object; invalid JSON, invalid UTF-8 and lone surrogates (raw or
// escaped); a member name twice in one object at any depth; a member the
// target does not have, including one that differs from a real one only by
// case or Unicode folding; null anywhere (no request member is nullable);
// and values of the wrong type or out of range. A body whose counted size
// (see countedSize) exceeds limit.Bytes is payload-too-large. On error dst
// may be partly filled and must be discarded.
func decodeObject(b []byte, limit bodyLimit, dst any) error {
	v, err := checkObject(b)
	if err != nil {
		return err
	}
	if countedSize(b, v) > limit.Bytes {
		return tooLarge(limit)
	}
	if err := refuseNull(v); err != nil {
		return err
	}
	if err := strictjson.Into(v, dst); err != nil {
		return semanticProblem(err)
	}
	return nil
}

// checkObject checks that b is exactly one JSON object, strictly (RFC 8259
// syntax, RFC 7493 I-JSON: valid UTF-8, no duplicate names), and returns
// it in its shortest encoding: no insignificant whitespace and every
// string escaped only where JSON requires.
func checkObject(b []byte) (jsontext.Value, error) {
	trimmed := bytes.TrimLeft(b, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, malformed("a JSON object body is required")
	}
	if trimmed[0] != '{' {
		return nil, malformed("the body must be one JSON object")
	}
	v, err := strictjson.Shortest(b)
	if err != nil {
		return nil, syntaxProblem(err)
	}
	return v, nil
}

// countedSize is the size a body limit counts: the body as sent, less what
// optional escapes add to its strings (shortest is b's shortest form, from
// checkObject). A client whose encoder writes non-ASCII as \u escapes, as
// Python's json.dumps does by default, is not penalized for it: the same
// text costs the same whichever way it is escaped. Whitespace counts.
func countedSize(b []byte, shortest jsontext.Value) int64 {
	compact := jsontext.Value(bytes.Clone(b))
	if err := compact.Compact(); err != nil {
		return int64(len(b)) // unreachable for a body checkObject accepted
	}
	return int64(len(b) - (len(compact) - len(shortest)))
}

// syntaxProblem words a jsontext error without the library's text, which
// quotes the input.
func syntaxProblem(err error) error {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		return malformed("the body is not valid JSON")
	}
	where, field := describePointer(se.JSONPointer)
	msg := se.Err.Error()
	switch {
	case errors.Is(err, jsontext.ErrDuplicateName):
		return &Error{Code: ProblemInvalidRequest, Field: field, Detail: where + ": the member name appears more than once; send each member once"}
	case strings.Contains(msg, "invalid UTF-8"):
		return &Error{Code: ProblemInvalidRequest, Field: field, Detail: where + ": the body is not valid UTF-8"}
	case strings.Contains(msg, "surrogate"):
		return &Error{Code: ProblemInvalidRequest, Field: field, Detail: where + `: a string holds a lone UTF-16 surrogate (\ud800 to \udfff without its pair)`}
	case strings.Contains(msg, "max depth"):
		return malformed("the body nests deeper than any request allows")
	case strings.Contains(msg, "after top-level value"):
		return malformed("the body must hold exactly one JSON object and nothing after it")
	case errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(msg, "unexpected EOF"):
		return malformed("the body ends before its JSON object does")
	default:
		return &Error{Code: ProblemInvalidRequest, Field: field, Detail: where + ": the body is not valid JSON (near byte " + strconv.FormatInt(se.ByteOffset, 10) + ")"}
	}
}

// refuseNull refuses a null anywhere in v, which is valid JSON (see
// strictjson.NullError).
func refuseNull(v jsontext.Value) error {
	err := strictjson.FirstNull(v)
	var null *strictjson.NullError
	if errors.As(err, &null) {
		where, field := describePointer(null.Pointer)
		return &Error{Code: ProblemInvalidRequest, Field: field, Detail: where + ": must not be null; leave an optional member out instead"}
	}
	if err != nil {
		return syntaxProblem(err)
	}
	return nil
}

// semanticProblem words an error of json.Unmarshal: an unknown member, or
// a value of the wrong type or range.
func semanticProblem(err error) error {
	var se *json.SemanticError
	if !errors.As(err, &se) {
		var syn *jsontext.SyntacticError
		if errors.As(err, &syn) {
			return syntaxProblem(err)
		}
		return malformed("the body could not be decoded")
	}
	if errors.Is(err, json.ErrUnknownName) {
		name := se.JSONPointer.LastToken()
		parent, _ := describePointer(se.JSONPointer.Parent())
		if known := foldsTo(name); known != "" {
			return &Error{Code: ProblemInvalidRequest, Field: fieldPath(se.JSONPointer.Parent(), known),
				Detail: parent + `: a member name differs from "` + known + `" only by case or Unicode folding; member names are case-sensitive`}
		}
		return malformed(parent + ": unknown member; the contract lists every member this body may have")
	}
	where, field := describePointer(se.JSONPointer)
	return &Error{Code: ProblemInvalidRequest, Field: field, Detail: where + ": must be " + wantedType(se.GoType)}
}

// wantedType names the JSON a Go type takes.
func wantedType(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "of another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number in range, written without a fraction or exponent"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "of another type"
}

// foldsTo returns the member name that name equals under Unicode case
// folding (strings.EqualFold: "ACTION", "ſecret", "Secret"), or "".
func foldsTo(name string) string {
	for _, m := range memberNames {
		if strings.EqualFold(name, m) {
			return m
		}
	}
	return ""
}

// describePointer renders a JSON pointer for a message, as the field path
// the domain's errors use ("participants[0].displayName"), and returns it
// also as the problem's field. A pointer through a name this API does not
// know is described without it (field ""): see memberNames.
func describePointer(p jsontext.Pointer) (where, field string) {
	field = fieldPath(p, "")
	switch {
	case field != "":
		return field, field
	case p == "":
		return "the body", ""
	default:
		return "a member of the body", ""
	}
}

// fieldPath turns p (plus last, when not "") into a dotted path with
// [index] for array elements, or "" if any name in it is not a member name.
func fieldPath(p jsontext.Pointer, last string) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if _, err := strconv.Atoi(tok); err == nil && b.Len() > 0 {
			b.WriteString("[" + tok + "]")
			continue
		}
		if !slices.Contains(memberNames, tok) {
			return ""
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	if last != "" {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(last)
	}
	return b.String()
}
