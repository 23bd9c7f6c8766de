package room

import (
	"fmt"
	"strings"
)

// ArtifactRevision is one locked revision as CONSENSUS.md lists it.
type ArtifactRevision struct {
	Number         int
	RevisionDigest string
	TermsDigest    string
	LockedAt       string
	Deadline       string
}

// amended reports whether the record spans more than one revision.
func (in ArtifactInput) amended() bool { return len(in.Revisions) > 1 }

// outcomeLine states the outcome; an amended record says that agreements
// may come from earlier revisions with the same terms.
func outcomeLine(in ArtifactInput) string {
	if r := in.Locked.Revision; r.DecisionRule.IsQuorum() {
		rule := fmt.Sprintf("By the decision rule, %s; %d did", r.DecisionRule.Words(RequiredCount(r)), r.DecisionRule.Agree)
		if in.amended() {
			return "Outcome: **reached**. " + rule + ", to the terms of the locked revision below, on it or on an earlier revision with the same terms digest.\n\n"
		}
		return "Outcome: **reached**. " + rule + ", to the locked revision below.\n\n"
	}
	if in.amended() {
		return "Outcome: **reached**. Every required participant agreed to the terms of the locked revision below, on it or on an earlier revision with the same terms digest.\n\n"
	}
	return "Outcome: **reached**. Every required participant agreed to the locked revision below.\n\n"
}

// writeDecisions writes the decisions table. A record of several revisions
// adds the revision each decision was made on and whether it was carried
// over from an earlier revision with the same terms.
func writeDecisions(b *strings.Builder, in ArtifactInput) {
	if in.amended() {
		b.WriteString("| Participant | Kind | Required | Decision | Made on revision | Event | Decided at |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	} else {
		b.WriteString("| Participant | Kind | Required | Decision | Event | Decided at |\n| --- | --- | --- | --- | --- | --- |\n")
	}
	current := in.Locked.Revision.Revision
	for _, e := range in.Roster {
		req := "no"
		if e.Participant.Required {
			req = "yes"
		}
		decision, made, event, at := "none", "-", "-", "-"
		if e.Decision != "" {
			decision, made, event, at = e.Decision, fmt.Sprint(e.Revision), "`"+e.EventID+"`", e.DecidedAt
			if e.Revision != current {
				made += " (carried over: same terms)"
			}
		}
		if in.amended() {
			fmt.Fprintf(b, "| %s (`%s`) | %s | %s | %s | %s | %s | %s |\n",
				tableCell(e.Participant.DisplayName), e.Participant.ParticipantID, e.Participant.Kind, req, decision, made, event, at)
			continue
		}
		fmt.Fprintf(b, "| %s (`%s`) | %s | %s | %s | %s | %s |\n",
			tableCell(e.Participant.DisplayName), e.Participant.ParticipantID, e.Participant.Kind, req, decision, event, at)
	}
}

// writeRevisions writes, for a record of several revisions, every revision
// with its digests and whether its terms changed, and the rule that decided
// which decisions count.
func writeRevisions(b *strings.Builder, in ArtifactInput) {
	if !in.amended() {
		return
	}
	b.WriteString("\n## Revisions\n\n")
	fmt.Fprintf(b, "The agreement was amended; revision %d is the one recorded above and below. ", in.Locked.Revision.Revision)
	b.WriteString("A decision made on an earlier revision counts here only when that revision's terms digest ")
	b.WriteString("(SHA-256 of the canonical JSON of decision_rule, objective, rules and title) equals this one's; ")
	b.WriteString("such decisions are marked carried over. Every other earlier decision was stale and did not count.\n\n")
	b.WriteString("| Revision | Revision digest | Terms digest | Terms | Deadline | Locked at |\n| --- | --- | --- | --- | --- | --- |\n")
	for i, r := range in.Revisions {
		terms := "as locked"
		if i > 0 {
			terms = "changed"
			if r.TermsDigest == in.Revisions[i-1].TermsDigest {
				terms = "unchanged"
			}
		}
		fmt.Fprintf(b, "| %d | `%s` | `%s` | %s | %s | %s |\n", r.Number, r.RevisionDigest, r.TermsDigest, terms, r.Deadline, r.LockedAt)
	}
}
