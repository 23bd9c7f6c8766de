package room

import (
	"encoding/json"
	"reflect"
	"regexp"
	"testing"

	"github.com/consensus-md/consensus/internal/canon"
)

// keyPattern is the pattern the contract publishes, compiled.
var keyPattern = regexp.MustCompile(IdempotencyKeyPattern)

// FuzzIdempotencyKey: the key check is exactly its documented pattern,
// 8 to 128 characters of A-Z a-z 0-9 . _ : - and nothing else (no
// trailing newline, no non-ASCII).
func FuzzIdempotencyKey(f *testing.F) {
	for _, k := range []string{"abcdefgh", "A.b_c:d-9", "short", "abcdefgh\n", "ключ-не-ascii", "key with spaces"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		want := len(k) >= 8 && len(k) <= 128
		for i := 0; i < len(k); i++ {
			c := k[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
				want = false
			}
		}
		if got := ValidIdempotencyKey(k); got != want {
			t.Fatalf("ValidIdempotencyKey(%q) = %v, want %v", k, got, want)
		}
		if published := keyPattern.MatchString(k); published != want {
			t.Fatalf("IdempotencyKeyPattern on %q = %v, want %v", k, published, want)
		}
	})
}

// FuzzCommandDigest: command normalization is injective on what it
// admits. Two different admitted (action, body) pairs never hash to the
// same command digest (an idempotent replay is exactly the same command),
// and an admitted body survives canonicalization unchanged.
func FuzzCommandDigest(f *testing.F) {
	f.Add("comment", "hello", "comment", "hello ")
	f.Add("agree", "", "comment", "x")
	f.Add("comment", "\xff", "comment", "\xfe")
	f.Add("comment", "a\u2028b<&>", "question", "a\u2028b<&>")
	f.Fuzz(func(t *testing.T, a1, b1, a2, b2 string) {
		d1, ok1 := commandDigest(t, a1, b1)
		d2, ok2 := commandDigest(t, a2, b2)
		if ok1 && ok2 && (a1 != a2 || b1 != b2) && d1 == d2 {
			t.Fatalf("(%q, %q) and (%q, %q) hash to the same command digest %s", a1, b1, a2, b2, d1)
		}
	})
}

func commandDigest(t *testing.T, action, body string) (string, bool) {
	if ValidateCommand(action, body) != nil {
		return "", false
	}
	cmd := Command{Schema: "https://consensus.md/schemas/room-command/v1", Version: 1, AgreementID: "a", InvitationID: "i", ParticipantID: "p",
		Revision: 1, RevisionDigest: "d", Action: action, Body: body}
	b, d, err := canon.DigestOf(cmd)
	if err != nil {
		t.Fatalf("an admitted command (%q, %q) does not canonicalize: %v", action, body, err)
	}
	var back Command
	if err := canonUnmarshal(b, &back); err != nil || !reflect.DeepEqual(back, cmd) {
		t.Fatalf("(%q, %q) canonicalizes to %q, which reads back as %+v (%v)", action, body, b, back, err)
	}
	return d, true
}

// canonUnmarshal reads canonical bytes back with the standard decoder; a
// body that canonicalization altered would not compare equal.
func canonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// FuzzRuleJSON: whatever decision_rule text is accepted reads back as a
// rule whose canonical form is accepted again as the same rule, and that
// form is one of the two the schema allows.
func FuzzRuleJSON(f *testing.F) {
	for _, s := range []string{`"unanimity-of-required"`, `{"type":"quorum","agree":2}`, `{"agree":50,"type":"quorum"}`, `{"type":"quorum","agree":1e0}`, `"quorum"`, `{}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var r Rule
		if json.Unmarshal([]byte(s), &r) != nil {
			return
		}
		b, err := canon.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back Rule
		if err := json.Unmarshal(b, &back); err != nil || back != r {
			t.Fatalf("%s read as %v, written as %s, read back as %v %v", s, r, b, back, err)
		}
		if r.IsQuorum() && (r.Agree < 1 || r.Agree > MaxParticipants) {
			t.Fatalf("%s accepted a quorum of %d", s, r.Agree)
		}
	})
}

func BenchmarkRuleOf(b *testing.B) {
	l, err := Lock(sampleRevision())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := RuleOf(l.Canonical); err != nil {
			b.Fatal(err)
		}
	}
}
