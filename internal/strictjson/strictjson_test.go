package strictjson_test

import (
	"errors"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/consensus-md/consensus/internal/strictjson"
)

type entry struct {
	Action string `json:"action"`
	Actor  struct {
		Name string `json:"name"`
	} `json:"actor"`
}

// TestUnmarshal: one reading or a refusal, with the error a caller words.
func TestUnmarshal(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     error // nil: accepted
	}{
		{"plain", `{"action":"a","actor":{"name":"n"}}`, nil},
		{"spaces and escapes", " {\"action\" : \"\\u0061\"}\n", nil},
		{"duplicate", `{"action":"a","action":"b"}`, jsontext.ErrDuplicateName},
		{"nested duplicate", `{"actor":{"name":"a","name":"b"}}`, jsontext.ErrDuplicateName},
		{"case-folded", `{"action":"a","Action":"b"}`, json.ErrUnknownName},
		{"Unicode-folded", `{"actor":{"ſame":"x"}}`, json.ErrUnknownName},
		{"unknown", `{"action":"a","note":"x"}`, json.ErrUnknownName},
		{"null", `{"action":null}`, &strictjson.NullError{}},
		{"invalid UTF-8", "{\"action\":\"\xff\"}", &jsontext.SyntacticError{}},
		{"lone surrogate", `{"action":"\ud800"}`, &jsontext.SyntacticError{}},
		{"two values", `{} {}`, &jsontext.SyntacticError{}},
	} {
		var e entry
		err := strictjson.Unmarshal([]byte(c.in), &e)
		switch want := c.want.(type) {
		case nil:
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
		case *strictjson.NullError:
			if !errors.As(err, &want) || want.Pointer != "/action" {
				t.Errorf("%s: %v, want a null at /action", c.name, err)
			}
		case *jsontext.SyntacticError:
			if !errors.As(err, &want) {
				t.Errorf("%s: %v, want a syntactic error", c.name, err)
			}
		default:
			if !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
		}
	}
}
