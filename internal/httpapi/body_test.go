package httpapi

import (
	"context"
	stdjson "encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/contract"
	"github.com/consensus-md/consensus/internal/venue"
)

// sentinel is a value no refusal may echo: it stands for a credential.
const sentinel = "csi_SENTINELsecretvalue0123456789abcdefghijk"

// TestDecodeObjectRefusesAmbiguity: a body
// that two readers could take for two different documents is a 400 naming
// the member at fault, and the detail never shows a value.
func TestDecodeObjectRefusesAmbiguity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		field      string
	}{
		{"duplicate member", `{"action":"comment","action":"agree"}`, "action"},
		{"duplicate member, same value", `{"digest":"` + sentinel + `","digest":"` + sentinel + `"}`, "digest"},
		{"duplicate member nested", `{"title":"t","participants":[{"displayName":"a","displayName":"b"}]}`, "participants[0].displayName"},
		{"duplicate unknown name", `{"` + sentinel + `":1,"` + sentinel + `":2}`, ""},
		{"case-folded name", `{"ACTION":"abstain"}`, "action"},
		{"Unicode-folded name (U+017F)", `{"ſecret":"` + sentinel + `"}`, "secret"},
		{"Kelvin sign folds to k", `{"participants":[{"\u212aind":"agent"}]}`, "participants[0].kind"},
		{"unknown member", `{"` + sentinel + `":"x"}`, ""},
		{"raw invalid UTF-8", "{\"body\":\"ok \xff\xfe\"}", "body"},
		{"overlong encoding", "{\"body\":\"x\xc0\xafy\"}", "body"},
		{"CESU-8 surrogate bytes", "{\"body\":\"x\xed\xa0\x80y\"}", "body"},
		{"escaped lone high surrogate", `{"body":"lone \ud800 high"}`, "body"},
		{"escaped lone low surrogate", `{"body":"lone \udc00 low"}`, "body"},
		{"invalid UTF-8 in a name", "{\"act\xffion\":\"comment\"}", ""},
		{"null member", `{"body":null}`, "body"},
		{"null in an array", `{"rules":["a",null]}`, "rules[1]"},
		{"null among spaces", "{\"body\" :\n null }", "body"},
		{"null after a string holding null", `{"title":"null","body":null}`, "body"},
		{"string for a number", `{"revision":"1"}`, "revision"},
		{"fraction", `{"revision":1.5}`, "revision"},
		{"exponent", `{"revision":1e0}`, "revision"},
		{"huge number", `{"revision":1e400}`, "revision"},
		{"2^70", `{"revision":1180591620717411303424}`, "revision"},
		{"number for a string", `{"secret":12345}`, "secret"},
		{"array for an object", `[{"secret":"` + sentinel + `"}]`, ""},
		{"top-level null", `null`, ""},
		{"two documents", `{"secret":"` + sentinel + `"} {}`, ""},
		{"NUL after the document", "{\"secret\":\"x\"}\x00", ""},
		{"raw NUL in a string", "{\"secret\":\"a\x00b\"}", "secret"},
		{"truncated", `{"secret":"` + sentinel, ""},
		{"deep nesting", `{"rules":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, ""},
		{"empty", ``, ""},
		{"blank", " \n\t", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dst struct {
				Secret       *string  `json:"secret"`
				Action       *string  `json:"action"`
				Body         *string  `json:"body"`
				Revision     *int     `json:"revision"`
				Digest       *string  `json:"digest"`
				Title        string   `json:"title"`
				Rules        []string `json:"rules"`
				Participants []struct {
					DisplayName string `json:"displayName"`
					Kind        string `json:"kind"`
				} `json:"participants"`
			}
			err := decodeObject([]byte(tc.body), bodyLimit{Bytes: 1 << 20, Wire: 1 << 20}, &dst)
			var he *Error
			if !errors.As(err, &he) || he.Code != ProblemInvalidRequest {
				t.Fatalf("got %v, want invalid-request", err)
			}
			if he.Field != tc.field {
				t.Errorf("field %q, want %q (detail %q)", he.Field, tc.field, he.Detail)
			}
			if strings.Contains(he.Detail, "SENTINEL") || strings.Contains(he.Detail, "abstain") || strings.Contains(he.Detail, "ſ") {
				t.Errorf("the detail echoes input: %q", he.Detail)
			}
		})
	}
}

// TestDecodeObjectAcceptsEveryEncoding: escapes in names and values,
// surrogate pairs and whitespace decode to the same value as the plain
// document.
func TestDecodeObjectAcceptsEveryEncoding(t *testing.T) {
	t.Parallel()
	plain := `{"action":"comment","body":"é😀 <&>","revision":1,"digest":"ab"}`
	escaped := "\n {\"\\u0061ction\" : \"comment\",\t\"body\":\"\\u00e9\\ud83d\\ude00 \\u003c\\u0026\\u003e\",\r\n\"revision\":1,\"digest\":\"\\u0061\\u0062\"} \n"
	var a, b venue.EventInput
	if err := decodeObject([]byte(plain), limitEvents, &a); err != nil {
		t.Fatal(err)
	}
	if err := decodeObject([]byte(escaped), limitEvents, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) || *b.Body != "é😀 <&>" {
		t.Fatalf("%+v != %+v", a, b)
	}
	// The word null inside a string is text, not the literal.
	var c venue.EventInput
	if err := decodeObject([]byte(`{"action":"comment","body":"null \u006eull"}`), limitEvents, &c); err != nil || *c.Body != "null null" {
		t.Fatalf("a string holding null: %+v, %v", c, err)
	}
}

// The fuzz targets of the request bodies, one per route: the strict
// decoder never panics, refuses only with invalid-request or
// payload-too-large, and whatever it accepts, encoding/json reads as the
// very same value: a body it accepts is unambiguous.

// FuzzEventsBody fuzzes the events body.
func FuzzEventsBody(f *testing.F) {
	for _, s := range []string{`{"action":"comment","body":"x","revision":1,"digest":"ab"}`, `{"action":"comment","action":"agree"}`, `{"ACTION":"x"}`,
		`{"body":"\ud800"}`, "{\"body\":\"\xff\"}", `{"revision":1e400}`, `{"revision":1.0}`, `{"body":null}`, `{} {}`, `[]`, ``, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { fuzzRouteBody[venue.EventInput](t, b, limitEvents) })
}

// FuzzExchangeBody fuzzes the exchange body.
func FuzzExchangeBody(f *testing.F) {
	for _, s := range []string{`{"secret":"x"}`, `{"secret":"x","extra":1}`, `{"secret":1}`, `{"ſecret":"x"}`, `{"secret":"a","secret":"b"}`, `{"secret":"x"}garbage`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzRouteBody[struct {
			Secret *string `json:"secret"`
		}](t, b, limitExchange)
	})
}

// FuzzClaimBody fuzzes the claim body.
func FuzzClaimBody(f *testing.F) {
	for _, s := range []string{`{"emailProof":"p","inbox":"a@b.example"}`, `{"emailProof":"p","inbox":"a@b.example","runtimeEndpoint":"https://x"}`,
		`{"emailProof":"p","emailProof":"q"}`, `{"emailproof":"p"}`, `{"runtimeEndpoint":1e308}`, `{"inbox":"\udfff"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { fuzzRouteBody[venue.ClaimInput](t, b, limitClaim) })
}

// FuzzCreateBody fuzzes the operator's create body.
func FuzzCreateBody(f *testing.F) {
	for _, s := range []string{`{"title":"T","objective":"o","rules":["r"],"deadline":"2099-01-01T00:00:00Z","participants":[{"displayName":"A","kind":"agent","email":"a@b.example","required":true}]}`,
		`{"title":"A","title":"B"}`, `{"participants":[{"Required":true}]}`, `{"rules":[null]}`, `{"participants":[{"required":"true"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { fuzzRouteBody[venue.CreateInput](t, b, limitCreate) })
}

// FuzzNoBody fuzzes what revoke and resend accept: nothing, or {}.
func FuzzNoBody(f *testing.F) {
	for _, s := range []string{`{}`, ` { } `, `{"reason":"x"}`, `[]`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { fuzzRouteBody[struct{}](t, b, limitNoBody) })
}

// fuzzRouteBody checks decodeObject on b for a route's body type T.
func fuzzRouteBody[T any](t *testing.T, b []byte, limit bodyLimit) {
	var strict T
	err := decodeObject(b, limit, &strict)
	if err != nil {
		var he *Error
		if !errors.As(err, &he) || (he.Code != ProblemInvalidRequest && he.Code != ProblemPayloadTooLarge) || he.Detail == "" {
			t.Fatalf("unexpected error %#v", err)
		}
		return
	}
	var loose T
	dec := stdjson.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&loose); err != nil {
		t.Fatalf("accepted %q, which encoding/json refuses: %v", b, err)
	}
	if !reflect.DeepEqual(strict, loose) {
		t.Fatalf("accepted %q as %+v; encoding/json reads %+v", b, strict, loose)
	}
}

func TestEtagMatches(t *testing.T) {
	t.Parallel()
	if !etagMatches(`"a", "b"`, `"b"`) || !etagMatches(`*`, `"x"`) || etagMatches(`W/"b"`, `"b"`) || etagMatches(``, `"b"`) {
		t.Fatal("If-None-Match matching")
	}
}

// TestJSONBodiesNeedJSONContentType: a body sent
// without Content-Type, or as anything but application/json (charset, if
// given, UTF-8), is 415 before it is parsed; an absent body needs none.
// The bodies here are malformed on purpose, so a Content-Type that is
// accepted answers 400 instead, before any lookup.
func TestJSONBodiesNeedJSONContentType(t *testing.T) {
	t.Parallel()
	s := newProblemServer(t, pingFunc(func(context.Context) error { return nil }))
	path := "/api/v1/agent/invitations/7d3c5a8e-4b1f-4c2d-9e6a-0f1b2c3d4e5f/exchange"
	for _, tc := range []struct {
		contentType string
		status      int
	}{
		{"", http.StatusUnsupportedMediaType},
		{"text/plain", http.StatusUnsupportedMediaType},
		{"text/plain; charset=utf-8", http.StatusUnsupportedMediaType},
		{"application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"application/json; charset=iso-8859-1", http.StatusUnsupportedMediaType},
		{"application/json; boundary=x", http.StatusUnsupportedMediaType},
		{"application/merge-patch+json", http.StatusUnsupportedMediaType},
		{"application/json", http.StatusBadRequest},
		{"application/json; charset=utf-8", http.StatusBadRequest},
		{"Application/JSON;charset=UTF-8", http.StatusBadRequest},
	} {
		req, err := http.NewRequest(http.MethodPost, s.origin+path, strings.NewReader(`{"secret":1}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(contract.SkipRequestHeader, "1")
		if tc.contentType != "" {
			req.Header.Set("Content-Type", tc.contentType)
		}
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("Content-Type %q: %d, want %d", tc.contentType, resp.StatusCode, tc.status)
		}
	}
}
