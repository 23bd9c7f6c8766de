package translog

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// strictUnmarshal decodes one JSON value into v, refusing unknown members
// and trailing data. Callers that need exact bytes also compare the value's
// canonical form with the input, which refuses duplicate and case-folded
// members that encoding/json would otherwise merge.
func strictUnmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}
