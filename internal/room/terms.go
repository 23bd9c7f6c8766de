package room

import (
	"fmt"

	"github.com/consensus-md/consensus/internal/canon"
)

// Terms is what a participant agrees to: the part of a locked revision whose
// change makes earlier decisions stale. The deadline, the
// roster, the revision number and the lock time are deliberately absent, so
// a later deadline or an added participant keeps every decision.
type Terms struct {
	DecisionRule Rule     `json:"decision_rule"`
	Objective    string   `json:"objective"`
	Rules        []string `json:"rules"`
	Title        string   `json:"title"`
}

// TermsOf returns the terms of r.
func TermsOf(r Revision) Terms {
	rules := r.Rules
	if rules == nil {
		rules = []string{} // an absent list and an empty one are the same terms
	}
	return Terms{DecisionRule: r.DecisionRule, Objective: r.Objective, Rules: rules, Title: r.Title}
}

// TermsDigest is the SHA-256 (lowercase hex) of the RFC 8785 canonical bytes
// of {"decision_rule", "objective", "rules", "title"} taken from r.
func TermsDigest(r Revision) (string, error) {
	_, d, err := canon.DigestOf(TermsOf(r))
	if err != nil {
		return "", fmt.Errorf("room: terms digest: %w", err)
	}
	return d, nil
}

// RevisionEffect says, in two sentences an agent cannot misread, what a new
// revision does to a decision made earlier. The capabilities document,
// llms-full.txt, the README and openapi.json state it word for word.
const RevisionEffect = "If an operator locks a new revision whose `termsDigest` equals that of the revision you decided on " +
	"(only the deadline or the roster changed), your decision still counts and you do not decide again. " +
	"If its `termsDigest` differs (the title, objective, rules or decision rule changed), your earlier decision no longer counts: " +
	"it is shown as `stale`, and you decide again on the new revision, after reading and verifying it."
