package envelope

import (
	"bytes"
	"encoding/json"
	"io"
)

// maxJSONDepth bounds nesting while scanning for duplicate keys; the schema
// needs depth 2.
const maxJSONDepth = 16

// scanJSON walks raw token by token: exactly one JSON object, no duplicate
// key in any object, bounded depth, nothing after it. encoding/json keeps the
// last of two duplicate keys, so without this scan an envelope could show one
// value to a person and another to the decoder.
func scanJSON(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack []*jsonFrame
	first := true
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if len(stack) != 0 || first {
				return checkErr(CheckJSON, "envelope is truncated or empty")
			}
			return nil
		}
		if err != nil {
			return checkErr(CheckJSON, "envelope is not well-formed JSON")
		}
		if first {
			if d, ok := tok.(json.Delim); !ok || d != '{' {
				return checkErr(CheckJSON, "envelope is not a JSON object")
			}
		} else if len(stack) == 0 {
			return checkErr(CheckJSON, "data after the envelope object")
		}
		first = false
		var top *jsonFrame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				markValueDone(stack)
				continue
			}
			key, ok := tok.(string)
			if !ok {
				return checkErr(CheckJSON, "envelope is not well-formed JSON")
			}
			if _, dup := top.keys[key]; dup {
				return checkErr(CheckJSON, "duplicate key in a JSON object")
			}
			top.keys[key] = struct{}{}
			top.expKey = false
			continue
		}
		switch d, _ := tok.(json.Delim); d {
		case '{', '[':
			if len(stack) >= maxJSONDepth {
				return checkErr(CheckJSON, "envelope nests deeper than %d levels", maxJSONDepth)
			}
			stack = append(stack, &jsonFrame{keys: map[string]struct{}{}, object: d == '{', expKey: d == '{'})
		case ']':
			stack = stack[:len(stack)-1]
			markValueDone(stack)
		default:
			markValueDone(stack)
		}
	}
}

// jsonFrame is one open object or array while scanning.
type jsonFrame struct {
	keys   map[string]struct{}
	object bool
	expKey bool // inside an object, the next token is a key or '}'
}

// markValueDone notes that a value ended, so an enclosing object expects a
// key next.
func markValueDone(stack []*jsonFrame) {
	if n := len(stack); n > 0 && stack[n-1].object {
		stack[n-1].expKey = true
	}
}
