package mail

import (
	"fmt"
	"strings"
)

// OutcomeMarker and ReminderMarker are the first lines of an outcome email
// and a reminder, so a mailbox reader can tell them from an invitation
// without guessing from prose.
const (
	OutcomeMarker  = "Consensus outcome notice v1"
	ReminderMarker = "Consensus reminder v1"
)

// ArtifactName is the file name of the artifact an outcome email attaches.
const ArtifactName = "CONSENSUS.md"

// ArtifactType is the media type of the attached artifact.
const ArtifactType = "text/markdown; charset=utf-8"

// DecisionLine is one participant as an outcome email lists it.
type DecisionLine struct {
	Name     string
	Kind     string
	Required bool
	Revoked  bool
	// Action is the participant's latest decision (agree, disagree,
	// abstain), empty for none; Revision is the revision it was made on
	// and Counts whether it counts on the last one.
	Action   string
	Revision int
	Counts   bool
}

// OutcomeInput is what the outcome email to one participant states. It
// holds no credential and no proof.
type OutcomeInput struct {
	Origin         string
	Title          string
	AgreementID    string
	Status         string // reached, disagreed, no_consensus or expired
	DecidedAt      string
	RevisionNumber int
	RevisionDigest string
	Decisions      []DecisionLine
	// ArtifactSHA256 is CONSENSUS.md's digest, set only when reached (the
	// file is attached then).
	ArtifactSHA256 string
	// Kind is the recipient's kind; RecordURL its record route (agents).
	Kind      string
	RecordURL string
}

// statusWords says what each final outcome means.
var statusWords = map[string]string{
	"reached":      "reached: the decision rule was met, and CONSENSUS.md records the agreement",
	"disagreed":    "disagreed: the decisions made can no longer meet the decision rule",
	"no_consensus": "no consensus: a required participant abstained",
	"expired":      "expired: the deadline passed before the decision rule was met",
}

// OutcomeBody renders the plain-text outcome email. (Its subject, and a
// reminder's, the store writes when it queues them: "CONSENSUS.md:
// outcome reached: " or "CONSENSUS.md: reminder: " and the title.) Operator and
// participant text is written on single lines only.
func OutcomeBody(in OutcomeInput) string {
	var b strings.Builder
	b.WriteString(OutcomeMarker + "\n\n")
	fmt.Fprintf(&b, "An agreement you were invited to, recorded by Consensus at %s, has its final outcome.\n\n", in.Origin)
	words := statusWords[in.Status]
	if words == "" {
		words = in.Status
	}
	fmt.Fprintf(&b, "Title: %s\nAgreement: %s\nOutcome: %s\nDecided at: %s\nRevision: %d\nRevision digest: %s\n\n",
		oneLine(in.Title), in.AgreementID, words, in.DecidedAt, in.RevisionNumber, in.RevisionDigest)
	b.WriteString("Decisions:\n")
	for _, d := range in.Decisions {
		role := "optional"
		if d.Required {
			role = "required"
		}
		fmt.Fprintf(&b, "- %s (%s, %s): %s\n", oneLine(d.Name), d.Kind, role, decisionWords(d))
	}
	b.WriteString("\n")
	if in.ArtifactSHA256 != "" {
		fmt.Fprintf(&b, "CONSENSUS.md is attached. Its SHA-256: %s\n", in.ArtifactSHA256)
		b.WriteString("Any copy with another digest is not the one recorded.\n\n")
	} else {
		b.WriteString("No CONSENSUS.md was issued: it exists only when the outcome is reached. The signed record\nstates this outcome and every decision.\n\n")
	}
	b.WriteString("The signed record (consensus-record/v1) proves the outcome, the decisions and the history;\n")
	if in.Kind == "human" {
		b.WriteString("open the link of your invitation email again to download it.\n\n")
	} else {
		fmt.Fprintf(&b, "fetch it with your participant token: %s\n\n", in.RecordURL)
	}
	fmt.Fprintf(&b, "Anyone can verify it offline: `consensus verify record`, or the verifier at\n%s/tools/verify-record.mjs, with the keys at %s/.well-known/consensus-keys.\n", in.Origin, in.Origin)
	b.WriteString("This email carries no secret. Nothing more will happen in this agreement.\n")
	return b.String()
}

func decisionWords(d DecisionLine) string {
	var s string
	switch {
	case d.Action == "":
		s = "no decision"
	case d.Counts:
		s = fmt.Sprintf("%s (revision %d)", d.Action, d.Revision)
	default:
		s = fmt.Sprintf("%s on revision %d, whose terms changed since: it did not count", d.Action, d.Revision)
	}
	if d.Revoked {
		s += "; revoked"
	}
	return s
}

// ReminderInput is what a reminder to a required participant who has not
// decided states. It holds no credential.
type ReminderInput struct {
	Origin         string
	Title          string
	AgreementID    string
	Deadline       string
	Left           string // the time left, in words ("23 hours")
	RevisionNumber int
	RevisionDigest string
	// Kind is the recipient's kind; RoomURL its room route (agents).
	Kind    string
	RoomURL string
	// Reply, when set, adds how to decide by replying to this email.
	Reply bool
}

// ReminderBody renders the plain-text reminder.
func ReminderBody(in ReminderInput) string {
	var b strings.Builder
	b.WriteString(ReminderMarker + "\n\n")
	fmt.Fprintf(&b, "You have not decided yet on an agreement recorded by Consensus at %s, and your decision is\nrequired. The deadline is in %s.\n\n", in.Origin, in.Left)
	fmt.Fprintf(&b, "Title: %s\nAgreement: %s\nDeadline: %s\nRevision: %d\nRevision digest: %s\n\n",
		oneLine(in.Title), in.AgreementID, in.Deadline, in.RevisionNumber, in.RevisionDigest)
	if in.Kind == "human" {
		b.WriteString("Open the link of your invitation email again to read the agreement and record your\ndecision (agree, disagree or abstain).\n\n")
	} else {
		fmt.Fprintf(&b, "Read the room with your participant token and post your decision: %s\n\n", in.RoomURL)
	}
	if in.Reply {
		b.WriteString(ReplyParagraph(in.RevisionDigest))
	}
	b.WriteString("Until the decision rule is met the outcome stays pending, and at the deadline it expires.\nNo reminder follows a decision. This email carries no secret.\n")
	return b.String()
}
