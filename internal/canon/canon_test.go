package canon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

type vector struct {
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Canonical string          `json:"canonical"`
	SHA256    string          `json:"sha256"`
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) < 10 {
		t.Fatalf("only %d vectors", len(vs))
	}
	return vs
}

// TestVectors checks the implementation against the committed conformance
// vectors: the canonical bytes and the digest of each input.
func TestVectors(t *testing.T) {
	t.Parallel()
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			got, err := Transform(v.Input)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != v.Canonical {
				t.Fatalf("canonical\n got %s\nwant %s", got, v.Canonical)
			}
			if d := Digest(got); d != v.SHA256 {
				t.Fatalf("digest got %s want %s", d, v.SHA256)
			}
			// Marshal of the decoded value must give the same bytes.
			var decoded any
			if err := json.Unmarshal(v.Input, &decoded); err != nil {
				t.Fatal(err)
			}
			again, err := Marshal(decoded)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != v.Canonical {
				t.Fatalf("Marshal\n got %s\nwant %s", again, v.Canonical)
			}
		})
	}
}

func TestTransformRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{"a":1,"a":2}`, `"\ud800"`, `{`, ``, `[1,]`} {
		if _, err := Transform([]byte(in)); err == nil {
			t.Errorf("Transform(%q) accepted", in)
		}
	}
}

func TestMarshalDoesNotEscapeHTML(t *testing.T) {
	t.Parallel()
	got, err := Marshal(map[string]any{"t": "a&b<c>d\u2028e😀é"})
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"t\":\"a&b<c>d\u2028e😀é\"}"
	if string(got) != want {
		t.Fatalf("got %s want %s", got, want)
	}
}

func TestParseDigest(t *testing.T) {
	t.Parallel()
	hex := strings.Repeat("ab", 32)
	cases := map[string]bool{
		hex:                     true,
		"sha256:" + hex:         true,
		strings.ToUpper(hex):    false,
		"sha256:" + hex[:63]:    false,
		hex + "0":               false,
		"SHA256:" + hex:         false,
		"sha-256:" + hex:        false,
		"":                      false,
		"sha256:":               false,
		strings.Repeat("g", 64): false,
		" " + hex:               false,
		"sha256:sha256:" + hex:  false,
	}
	for in, ok := range cases {
		got, err := ParseDigest(in)
		if ok && (err != nil || got != hex) {
			t.Errorf("ParseDigest(%q) = %q, %v", in, got, err)
		}
		if !ok && err == nil {
			t.Errorf("ParseDigest(%q) accepted", in)
		}
	}
}

func TestFormatTime(t *testing.T) {
	t.Parallel()
	loc := time.FixedZone("x", 2*3600)
	cases := []struct {
		name string
		got  string
		want string
	}{
		{"instant, whole second", FormatTime(time.Date(2026, 12, 31, 2, 0, 0, 0, loc)), "2026-12-31T00:00:00.000000Z"},
		{"instant, trailing zeros kept", FormatTime(time.Date(2026, 1, 2, 3, 4, 5, 120000000, time.UTC)), "2026-01-02T03:04:05.120000Z"},
		{"instant, truncated not rounded", FormatTime(time.Date(2026, 1, 2, 3, 4, 5, 123456999, time.UTC)), "2026-01-02T03:04:05.123456Z"},
		{"instant after Now", FormatTime(Now(time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC))), "2026-01-02T03:04:05.123456Z"},
		{"seconds, offset normalized", FormatSeconds(time.Date(2026, 12, 31, 2, 0, 0, 0, loc)), "2026-12-31T00:00:00Z"},
		{"seconds, fraction dropped", FormatSeconds(time.Date(2026, 1, 2, 3, 4, 5, 999999999, time.UTC)), "2026-01-02T03:04:05Z"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, c.got, c.want)
		}
	}
}

// FuzzParseDigest: whatever comes in, an accepted digest is 64 lowercase hex.
func FuzzParseDigest(f *testing.F) {
	f.Add(strings.Repeat("ab", 32))
	f.Add("sha256:" + strings.Repeat("0", 64))
	f.Add("SHA256:" + strings.Repeat("0", 64))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDigest(s)
		if err != nil {
			return
		}
		if len(d) != 64 || strings.Trim(d, "0123456789abcdef") != "" {
			t.Fatalf("accepted %q as %q", s, d)
		}
	})
}

// FuzzTransform: canonical output is a fixed point and valid JSON.
func FuzzTransform(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x"]}`, `"\u2028<&>"`, `[1e30,-0,0.1]`, `{"":{}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := Transform([]byte(s))
		if err != nil {
			return
		}
		again, err := Transform(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not a fixed point: %q -> %q -> %q (%v)", s, out, again, err)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON out: %q", out)
		}
	})
}

// FuzzTransformKeepsValue: canonicalization changes the bytes, never the
// value: what it outputs decodes to the same JSON value as its input.
func FuzzTransformKeepsValue(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x"]}`, `"\u2028<&>\u00e9"`, `[1e30,-0,0.1,100]`, `{"":{},"\ud83d\ude00":"é"}`, `{"a":1,"a":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := Transform([]byte(s))
		if err != nil {
			return
		}
		var in, back any
		if err := json.Unmarshal([]byte(s), &in); err != nil {
			t.Fatalf("Transform accepted %q, which is not JSON: %v", s, err)
		}
		if err := json.Unmarshal(out, &back); err != nil || !reflect.DeepEqual(in, back) {
			t.Fatalf("%q canonicalized to %q, a different value (%v)", s, out, err)
		}
	})
}
