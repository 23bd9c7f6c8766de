package room

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/consensus-md/consensus/internal/canon"
)

// Limits of a locked revision.
const (
	MaxTitle           = 200
	MaxObjective       = 4000
	MaxRules           = 50
	MaxRule            = 1000
	MaxParticipants    = 50
	MaxDisplayName     = 200
	KindAgent          = "agent"
	KindHuman          = "human"
	AgreementSchemaFmt = "%s/schemas/agreement/v1"
)

// Participant is one roster entry of the canonical revision.
type Participant struct {
	ParticipantID string `json:"participant_id"`
	DisplayName   string `json:"display_name"`
	Kind          string `json:"kind"`
	Required      bool   `json:"required"`
}

// Revision is the canonical agreement/v1 object: exactly what is hashed into
// revisionDigest. Inboxes are deliberately absent.
type Revision struct {
	Schema       string        `json:"schema"`
	AgreementID  string        `json:"agreement_id"`
	Revision     int           `json:"revision"`
	Title        string        `json:"title"`
	Objective    string        `json:"objective"`
	Rules        []string      `json:"rules"`
	Participants []Participant `json:"participants"`
	DecisionRule Rule          `json:"decision_rule"`
	Deadline     string        `json:"deadline"`
	LockedAt     string        `json:"locked_at"`
	Issuer       string        `json:"issuer"`
}

// Locked is a revision with its canonical bytes, Markdown and digests.
type Locked struct {
	Revision       Revision
	Canonical      []byte
	Markdown       string
	RevisionDigest string
	MarkdownDigest string
	TermsDigest    string
}

// Lock canonicalizes r, renders its Markdown and computes its digests.
func Lock(r Revision) (Locked, error) {
	b, d, err := canon.DigestOf(r)
	if err != nil {
		return Locked{}, fmt.Errorf("room: lock revision: %w", err)
	}
	terms, err := TermsDigest(r)
	if err != nil {
		return Locked{}, err
	}
	md := RenderMarkdown(r)
	return Locked{Revision: r, Canonical: b, Markdown: md, RevisionDigest: d, MarkdownDigest: canon.Digest([]byte(md)), TermsDigest: terms}, nil
}

// RequiredCount is the number of required participants on r's roster.
func RequiredCount(r Revision) int {
	n := 0
	for _, p := range r.Participants {
		if p.Required {
			n++
		}
	}
	return n
}

// RuleLine is the decision rule as the revision's Markdown and CONSENSUS.md
// state it: the rule's name, and for a quorum the rule in words ("quorum:
// 2 of the 3 required participants must agree"). Unanimity is written as
// it always was, so a unanimity revision renders the same bytes as before.
func RuleLine(r Revision) string {
	if !r.DecisionRule.IsQuorum() {
		return RuleUnanimity
	}
	return RuleQuorum + ": " + r.DecisionRule.Words(RequiredCount(r))
}

// ParseDeadline accepts an RFC 3339 instant without fractional seconds, in
// any offset, and returns it in UTC. It must lie after now.
func ParseDeadline(s string, now time.Time) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, invalid("deadline", "must be an RFC 3339 instant such as 2026-12-31T00:00:00Z")
	}
	if strings.ContainsRune(s, '.') {
		return time.Time{}, invalid("deadline", "fractional seconds are not accepted")
	}
	if !t.After(now) {
		return time.Time{}, invalid("deadline", "must be in the future")
	}
	return t.UTC(), nil
}

// ValidateText checks a required string's length in Unicode code points and
// that it is valid UTF-8 without NUL characters.
func ValidateText(field, s string, minLen, maxLen int) error {
	if !utf8.ValidString(s) {
		return invalid(field, "must be valid UTF-8")
	}
	if strings.ContainsRune(s, 0) {
		return invalid(field, "must not contain NUL characters")
	}
	n := utf8.RuneCountInString(s)
	if n < minLen || n > maxLen {
		if minLen == maxLen {
			return invalid(field, "must be exactly %d characters", minLen)
		}
		return invalid(field, "must be %d to %d characters (got %d)", minLen, maxLen, n)
	}
	return nil
}

// ValidateLine checks a single-line operator field (a title, a display
// name): ValidateText's rules, not blank, and no control character, line
// or paragraph separator (a line break in a display name could forge the
// marker lines of an invitation email) or bidirectional embedding,
// override or isolate (which reorders how what follows it reads).
func ValidateLine(field, s string, minLen, maxLen int) error {
	if err := ValidateText(field, s, minLen, maxLen); err != nil {
		return err
	}
	if strings.TrimSpace(s) == "" {
		return invalid(field, "must not be blank")
	}
	for _, r := range s {
		switch {
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			return invalid(field, "must be one line: no line breaks, tabs or other control characters (U+%04X)", r)
		case r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069':
			return invalid(field, "must not contain bidirectional embedding, override or isolate characters (U+%04X)", r)
		}
	}
	return nil
}

// ValidateMultiline checks multi-line operator text (an objective, a rule):
// ValidateText's rules, and no control character but line breaks (LF, CR)
// and tabs. An escape sequence could otherwise rewrite the record as a
// terminal prints it.
func ValidateMultiline(field, s string, minLen, maxLen int) error {
	if err := ValidateText(field, s, minLen, maxLen); err != nil {
		return err
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' {
			return invalid(field, "must not contain control characters other than line breaks and tabs (U+%04X)", r)
		}
	}
	return nil
}

// ValidateRevisionText checks title, objective and rules against the limits.
func ValidateRevisionText(title, objective string, rules []string) error {
	if err := ValidateLine("title", title, 1, MaxTitle); err != nil {
		return err
	}
	if err := ValidateMultiline("objective", objective, 1, MaxObjective); err != nil {
		return err
	}
	return validateRules(rules)
}

// validateRules checks the list of rules against the limits.
func validateRules(rules []string) error {
	if len(rules) > MaxRules {
		return invalid("rules", "at most %d rules", MaxRules)
	}
	for i, r := range rules {
		if err := ValidateMultiline(fmt.Sprintf("rules[%d]", i), r, 1, MaxRule); err != nil {
			return err
		}
	}
	return nil
}

// RenderMarkdown renders the revision deterministically: the same revision
// always gives the same bytes. Operator text cannot add structure to it
// (see markdownText).
func RenderMarkdown(r Revision) string {
	return renderRevision(r, "#")
}

// renderRevision renders the revision with its title heading at level h
// ("#" for the revision's own Markdown, "##" inside CONSENSUS.md).
func renderRevision(r Revision, h string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n\n", h, oneLine(r.Title))
	fmt.Fprintf(&b, "- Agreement: `%s`\n", r.AgreementID)
	fmt.Fprintf(&b, "- Revision: %d\n", r.Revision)
	fmt.Fprintf(&b, "- Decision rule: %s\n", RuleLine(r))
	fmt.Fprintf(&b, "- Deadline: %s\n", r.Deadline)
	fmt.Fprintf(&b, "- Locked at: %s\n", r.LockedAt)
	fmt.Fprintf(&b, "- Issuer: %s\n\n", r.Issuer)
	b.WriteString(h + "# Objective\n\n")
	b.WriteString(markdownText(r.Objective, ""))
	b.WriteString("\n\n" + h + "# Rules\n\n")
	if len(r.Rules) == 0 {
		b.WriteString("No rules were stated.\n")
	}
	for i, rule := range r.Rules {
		fmt.Fprintf(&b, "%d. %s\n", i+1, markdownText(rule, "   "))
	}
	b.WriteString("\n" + h + "# Participants\n\n")
	b.WriteString("| Participant | Kind | Required | ID |\n| --- | --- | --- | --- |\n")
	for _, p := range r.Participants {
		req := "no"
		if p.Required {
			req = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | `%s` |\n", tableCell(p.DisplayName), p.Kind, req, p.ParticipantID)
	}
	return b.String()
}
