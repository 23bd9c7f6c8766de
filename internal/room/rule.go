package room

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The decision rules' names in the canonical revision.
const (
	// RuleUnanimity: every required participant must agree. It is written
	// as this bare string, as revisions always were.
	RuleUnanimity = "unanimity-of-required"
	// RuleQuorum: k of the required participants must agree, written as
	// {"agree": k, "type": "quorum"}.
	RuleQuorum = "quorum"
)

// Rule is the decision rule of a revision. The zero value is
// unanimity-of-required; Agree > 0 is a quorum of Agree required
// participants.
type Rule struct {
	Agree int
}

// DecisionRule is the default rule: unanimity of the required participants.
var DecisionRule = Rule{}

// Quorum returns the rule "k of the required participants must agree".
func Quorum(k int) Rule { return Rule{Agree: k} }

// IsQuorum reports whether r is a quorum rule.
func (r Rule) IsQuorum() bool { return r.Agree > 0 }

// Type is the rule's name: RuleUnanimity or RuleQuorum.
func (r Rule) Type() string {
	if r.IsQuorum() {
		return RuleQuorum
	}
	return RuleUnanimity
}

// Needed is how many counting agreements of required participants reach
// the outcome on a roster with required required participants.
func (r Rule) Needed(required int) int {
	if r.IsQuorum() {
		return r.Agree
	}
	return required
}

// Words states the rule for people: "2 of the 3 required participants must
// agree", "all 3 required participants must agree".
func (r Rule) Words(required int) string {
	noun := "participants"
	if required == 1 {
		noun = "participant"
	}
	switch {
	case r.IsQuorum():
		return fmt.Sprintf("%d of the %d required %s must agree", r.Agree, required, noun)
	case required == 1:
		return "the 1 required participant must agree"
	default:
		return fmt.Sprintf("all %d required %s must agree", required, noun)
	}
}

// Validate checks r against a roster with required required participants:
// a quorum needs 1 ≤ k ≤ required. The field is named as the API names it.
func (r Rule) Validate(required int) error {
	if r.IsQuorum() && r.Agree > required {
		return invalid("decisionRule", "a quorum of %d needs at least %d required participants; the roster has %d", r.Agree, r.Agree, required)
	}
	return nil
}

// MarshalJSON writes "unanimity-of-required" or {"agree": k, "type": "quorum"}.
func (r Rule) MarshalJSON() ([]byte, error) {
	if !r.IsQuorum() {
		return []byte(`"` + RuleUnanimity + `"`), nil
	}
	return fmt.Appendf(nil, `{"agree":%d,"type":"quorum"}`, r.Agree), nil
}

// errRule is the refusal of any other decision_rule value.
var errRule = errors.New(`decision_rule must be "unanimity-of-required" or {"type": "quorum", "agree": k} with k a whole number from 1 to 50`)

// UnmarshalJSON reads exactly the two forms MarshalJSON writes (members in
// any order), and nothing else: no other string, member or number.
func (r *Rule) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil || s != RuleUnanimity {
			return errRule
		}
		*r = Rule{}
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || len(m) != 2 {
		return errRule
	}
	var typ string
	if err := json.Unmarshal(m["type"], &typ); err != nil || typ != RuleQuorum {
		return errRule
	}
	k, err := wholeNumber(m["agree"])
	if err != nil || k < 1 || k > MaxParticipants {
		return errRule
	}
	*r = Rule{Agree: k}
	return nil
}

// wholeNumber reads a JSON integer written without fraction or exponent.
func wholeNumber(raw json.RawMessage) (int, error) {
	if len(raw) == 0 || bytes.ContainsAny(raw, ".eE") {
		return 0, errRule
	}
	var k int
	if err := json.Unmarshal(raw, &k); err != nil {
		return 0, errRule
	}
	return k, nil
}

// ruleKey is the decision_rule member's name as JSON writes it. In JSON
// text a quote inside a string is always escaped, and no other object of
// agreement/v1 has this member, so its first occurrence is the member.
var ruleKey = []byte(`"decision_rule":`)

// RuleOf reads the decision rule of a canonical agreement/v1 object without
// decoding the rest of it (the room reads it on every append): the value
// after the member's name, which RFC 8785's key order puts third. Text
// with whitespace around the name is read member by member instead.
func RuleOf(canonical []byte) (Rule, error) {
	if i := bytes.Index(canonical, ruleKey); i >= 0 {
		v := canonical[i+len(ruleKey):]
		switch {
		case bytes.HasPrefix(v, []byte(`"`+RuleUnanimity+`"`)):
			return Rule{}, nil
		case len(v) > 0 && v[0] == '{':
			if j := bytes.IndexByte(v, '}'); j > 0 {
				var r Rule
				if err := r.UnmarshalJSON(v[:j+1]); err != nil {
					return Rule{}, fmt.Errorf("room: the canonical revision's decision rule: %w", err)
				}
				return r, nil
			}
		}
	}
	return ruleOfMembers(canonical)
}

// ruleOfMembers is RuleOf for any JSON text: members are read in order and
// skipped until decision_rule.
func ruleOfMembers(canonical []byte) (Rule, error) {
	dec := json.NewDecoder(bytes.NewReader(canonical))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return Rule{}, errors.New("room: the canonical revision is not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return Rule{}, fmt.Errorf("room: read the canonical revision: %w", err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Rule{}, fmt.Errorf("room: read the canonical revision: %w", err)
		}
		if t == "decision_rule" {
			var r Rule
			if err := r.UnmarshalJSON(raw); err != nil {
				return Rule{}, fmt.Errorf("room: the canonical revision's decision rule: %w", err)
			}
			return r, nil
		}
	}
	return Rule{}, errors.New("room: the canonical revision has no decision_rule")
}

// ParseRule reads the decisionRule an operator sends: absent (empty) is
// unanimity; otherwise exactly one of the two forms of decision_rule (null
// is neither). A malformed value is a *ValidationError naming
// decisionRule. The caller checks k against the roster (Validate).
func ParseRule(raw json.RawMessage) (Rule, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return Rule{}, nil
	}
	var r Rule
	if err := r.UnmarshalJSON(raw); err != nil {
		return Rule{}, invalid("decisionRule", `must be "unanimity-of-required" or {"type": "quorum", "agree": k} with k a whole number from 1 to the number of required participants`)
	}
	return r, nil
}
