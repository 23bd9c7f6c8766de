package room

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/consensus-md/consensus/internal/canon"
)

// Limits of a locked revision (SPEC §3).
const (
	MaxTitle           = 200
	MaxObjective       = 4000
	MaxRules           = 50
	MaxRule            = 1000
	MaxParticipants    = 50
	MaxDisplayName     = 200
	DecisionRule       = "unanimity-of-required"
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
	DecisionRule string        `json:"decision_rule"`
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

// ValidateRevisionText checks title, objective and rules against the limits.
func ValidateRevisionText(title, objective string, rules []string) error {
	if err := ValidateText("title", title, 1, MaxTitle); err != nil {
		return err
	}
	if strings.TrimSpace(title) == "" {
		return invalid("title", "must not be blank")
	}
	if err := ValidateText("objective", objective, 1, MaxObjective); err != nil {
		return err
	}
	if len(rules) > MaxRules {
		return invalid("rules", "at most %d rules", MaxRules)
	}
	for i, r := range rules {
		if err := ValidateText(fmt.Sprintf("rules[%d]", i), r, 1, MaxRule); err != nil {
			return err
		}
	}
	return nil
}

// RenderMarkdown renders the revision deterministically: the same revision
// always gives the same bytes.
func RenderMarkdown(r Revision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", oneLine(r.Title))
	fmt.Fprintf(&b, "- Agreement: `%s`\n", r.AgreementID)
	fmt.Fprintf(&b, "- Revision: %d\n", r.Revision)
	fmt.Fprintf(&b, "- Decision rule: %s\n", r.DecisionRule)
	fmt.Fprintf(&b, "- Deadline: %s\n", r.Deadline)
	fmt.Fprintf(&b, "- Locked at: %s\n", r.LockedAt)
	fmt.Fprintf(&b, "- Issuer: %s\n\n", r.Issuer)
	b.WriteString("## Objective\n\n")
	b.WriteString(r.Objective)
	b.WriteString("\n\n## Rules\n\n")
	if len(r.Rules) == 0 {
		b.WriteString("No rules were stated.\n")
	}
	for i, rule := range r.Rules {
		fmt.Fprintf(&b, "%d. %s\n", i+1, indentContinuation(rule))
	}
	b.WriteString("\n## Participants\n\n")
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

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func indentContinuation(s string) string {
	return strings.ReplaceAll(s, "\n", "\n   ")
}

func tableCell(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", "\\|")
}
