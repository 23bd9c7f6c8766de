package mail

import (
	"fmt"
	"strings"
)

// RevisionNoticeMarker is the first line of every revision notice, so a
// mailbox reader can tell the notice from an invitation (it has no
// invitation block) without guessing from prose.
const RevisionNoticeMarker = "Consensus revision notice v1"

// RevisionNoticeInput is what the notice to an existing participant states
// when a new revision is locked. It holds no credential.
type RevisionNoticeInput struct {
	Origin         string
	Title          string
	Kind           string // the recipient's kind: agent or human
	RoomURL        string // the recipient's room route (agents)
	AgreementID    string
	InvitationID   string
	RevisionNumber int
	RevisionDigest string
	TermsDigest    string
	Deadline       string
	// What changed.
	TitleChanged, ObjectiveChanged, RulesChanged bool
	PreviousDeadline                             string // set when the deadline moved
	Added                                        []string
	// TermsChanged: earlier decisions are stale.
	TermsChanged bool
	// DecisionRule is set when the decision rule changed: the new rule in words.
	DecisionRule string
}

// RevisionNoticeSubject starts with "CONSENSUS.md:" like an invitation's.
func RevisionNoticeSubject(number int, title string) string {
	return fmt.Sprintf("CONSENSUS.md: revision %d locked: %s", number, oneLine(title))
}

// RevisionNoticeBody renders the short plain-text notice: what changed, the
// new digests, and what the revision does to the recipient's decision.
// Operator text is written on single lines only, so it cannot forge the
// marker lines of an invitation block.
func RevisionNoticeBody(in RevisionNoticeInput) string {
	var b strings.Builder
	b.WriteString(RevisionNoticeMarker + "\n\n")
	fmt.Fprintf(&b, "Revision %d of an agreement you are invited to, recorded by Consensus at %s, was locked.\n\n", in.RevisionNumber, in.Origin)
	fmt.Fprintf(&b, "Title: %s\nAgreement: %s\nInvitation: %s\nRevision: %d\nRevision digest: %s\nTerms digest: %s\nDeadline: %s\n\n",
		oneLine(in.Title), in.AgreementID, in.InvitationID, in.RevisionNumber, in.RevisionDigest, in.TermsDigest, in.Deadline)
	b.WriteString("What changed:\n")
	if in.TitleChanged {
		b.WriteString("- the title\n")
	}
	if in.ObjectiveChanged {
		b.WriteString("- the objective\n")
	}
	if in.RulesChanged {
		b.WriteString("- the rules\n")
	}
	if in.DecisionRule != "" {
		fmt.Fprintf(&b, "- the decision rule, now: %s\n", oneLine(in.DecisionRule))
	}
	if in.PreviousDeadline != "" {
		fmt.Fprintf(&b, "- the deadline, from %s to %s\n", in.PreviousDeadline, in.Deadline)
	}
	for _, name := range in.Added {
		fmt.Fprintf(&b, "- participant added: %s\n", oneLine(name))
	}
	b.WriteString("\n")
	if in.TermsChanged {
		fmt.Fprintf(&b, "The terms changed: a decision made on an earlier revision no longer counts (it is stale).\nRead revision %d, verify its digests, and decide again on it.\n\n", in.RevisionNumber)
	} else {
		b.WriteString("The terms (title, objective, rules, decision rule) did not change: a decision made on an earlier revision\nstill counts, and nobody is asked to decide again.\n\n")
	}
	fmt.Fprintf(&b, "Every command must now name revision %d and its digest.\n", in.RevisionNumber)
	if in.Kind == "human" {
		b.WriteString("Open the link of your invitation email again to read the room.\n\n")
	} else {
		fmt.Fprintf(&b, "Read the room with your participant token: %s\n\n", in.RoomURL)
	}
	b.WriteString("This email carries no secret: your invitation and your participant token keep working.\n")
	return b.String()
}

// oneLine collapses whitespace, line breaks included, to single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
