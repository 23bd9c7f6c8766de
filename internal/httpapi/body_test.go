package httpapi

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzDecodeStrict: the strict decoder never panics, returns only
// invalid-request errors, and accepts only input that encoding/json itself accepts.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{`{"secret":"x"}`, `{"secret":"x","extra":1}`, `{"secret":1}`, `{} {}`, `[]`, ``, `null`, `{"secret":"x"}garbage`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var dst struct {
			Secret *string `json:"secret"`
		}
		err := decodeStrict(b, &dst)
		if err == nil {
			if !json.Valid(b) {
				t.Fatalf("accepted invalid JSON %q", b)
			}
			return
		}
		var he *Error
		if !errors.As(err, &he) || he.Code != "invalid-request" {
			t.Fatalf("unexpected error %v", err)
		}
	})
}

func TestDecodeStrictRefusals(t *testing.T) {
	t.Parallel()
	for _, s := range []string{`{"secret":"x","extra":1}`, `{"secret":1}`, `{} {}`, `[]`, ``, `   `, `{"secret":"x"}garbage`, `{"secret":"x"`} {
		var dst struct {
			Secret *string `json:"secret"`
		}
		if err := decodeStrict([]byte(s), &dst); err == nil {
			t.Errorf("accepted %q", s)
		}
	}
}

func TestEtagMatches(t *testing.T) {
	t.Parallel()
	if !etagMatches(`"a", "b"`, `"b"`) || !etagMatches(`*`, `"x"`) || etagMatches(`W/"b"`, `"b"`) || etagMatches(``, `"b"`) {
		t.Fatal("If-None-Match matching")
	}
}
