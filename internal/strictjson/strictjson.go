// Package strictjson decodes JSON that two readers cannot read two ways.
//
// encoding/json resolves an ambiguous document silently: the last of two
// duplicate members wins, "ACTION" or "ſecret" fill "action" or "secret",
// invalid UTF-8 and lone surrogates become U+FFFD, and a member the target
// lacks is dropped. So bytes that a hash covered, or a command a client
// signed, could mean one thing to the service and another to jq. Here a
// document is one unambiguous JSON value or it is refused. The request
// bodies of the API and the audit exports `consensus verify audit` reads
// are decoded here. Pure: standard library and go-json-experiment only.
package strictjson

import (
	"bytes"
	"io"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Shortest checks that b is exactly one JSON value, strictly (RFC 8259
// syntax; RFC 7493 I-JSON: valid UTF-8, no lone surrogate raw or escaped,
// no member name twice in one object at any depth) and returns it in its
// shortest encoding: no insignificant whitespace, every string escaped only
// where JSON requires. Its error is a *jsontext.SyntacticError
// (jsontext.ErrDuplicateName for a repeated name).
func Shortest(b []byte) (jsontext.Value, error) {
	v := jsontext.Value(bytes.Clone(b))
	if err := v.Format(); err != nil {
		return nil, err
	}
	return v, nil
}

// NullError is a null where none may be: decoding would leave the member
// unset, so {"body": null} would mean "absent" to one reader and "null" to
// another.
type NullError struct {
	// Pointer is where the null is.
	Pointer jsontext.Pointer
}

func (e *NullError) Error() string { return "strictjson: null at " + string(e.Pointer) }

// FirstNull returns a *NullError for the first null in v, a value Shortest
// accepted, or nil when it has none.
func FirstNull(v jsontext.Value) error {
	if !bytes.Contains(v, []byte("null")) {
		return nil // a null literal is those four bytes: without them, no token can be one
	}
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if tok.Kind() == 'n' {
			return &NullError{Pointer: dec.StackPointer()}
		}
	}
}

// Into decodes v into dst, refusing any member dst does not have at any
// depth, including one that differs from a real one only by case or
// Unicode folding (names match exactly): the error is then a
// *json.SemanticError wrapping json.ErrUnknownName. A value of the wrong
// type or out of range is a *json.SemanticError too. On error dst may be
// partly filled and must be discarded.
func Into(v []byte, dst any) error {
	return json.Unmarshal(v, dst, json.RejectUnknownMembers(true))
}

// Unmarshal decodes b into dst after Shortest and FirstNull: one JSON
// value, strictly, without null, and without a member dst lacks.
func Unmarshal(b []byte, dst any) error {
	v, err := Shortest(b)
	if err != nil {
		return err
	}
	if err := FirstNull(v); err != nil {
		return err
	}
	return Into(v, dst)
}
