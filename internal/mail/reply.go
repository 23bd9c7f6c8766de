package mail

import (
	"fmt"
	"strings"

	"github.com/consensus-md/consensus/internal/envelope"
)

// ReplyAddress is the Reply-To of one invitation: the configured reply
// address with the invitation's tag after a "+" in its local part.
func ReplyAddress(address, tag string) string {
	local, domain, _ := strings.Cut(address, "@")
	return local + "+" + tag + "@" + domain
}

// ShortDigest is the first 12 characters of a digest: what a reply may
// quote instead of all 64.
func ShortDigest(digest string) string { return digest[:min(12, len(digest))] }

// ReplyParagraph says exactly what a reply to the invitation records.
func ReplyParagraph(digest string) string {
	d := ShortDigest(digest)
	return "You may also decide by replying to this email from the invited address. Reply with\n" +
		"AGREE " + d + " on the first line to agree (DISAGREE " + d + " or ABSTAIN " + d + "\n" +
		"likewise); any other text above the quoted email is posted as a comment. The reply counts\n" +
		"only with your mail provider's DKIM signature, which the signed record keeps as evidence.\n\n"
}

// InvitationBodyWithReply is InvitationBody with the paragraph that says
// how to decide by replying.
func InvitationBodyWithReply(env envelope.Envelope) (string, error) {
	return invitationBody(env, ReplyParagraph(env.Revision.Digest))
}

// AnswerSubject is the subject of the answer to a reply.
func AnswerSubject(title string) string {
	return "CONSENSUS.md: your reply: " + oneLine(title)
}

// AnswerInput is what the answer to a reply says. It never holds a secret
// or a proof.
type AnswerInput struct {
	Origin   string
	Title    string
	Recorded bool
	// Action is what was recorded (agree, disagree, abstain, comment).
	Action string
	// Reason says why nothing was recorded.
	Reason string
	// RevisionNumber and RevisionDigest are the current revision's.
	RevisionNumber int
	RevisionDigest string
}

// AnswerBody renders the plain-text answer to a reply.
func AnswerBody(in AnswerInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Consensus at %s read your reply about: %s\n\n", in.Origin, oneLine(in.Title))
	if in.Recorded {
		fmt.Fprintf(&b, "Recorded: %s, on revision %d (digest %s).\n\n", in.Action, in.RevisionNumber, in.RevisionDigest)
	} else {
		fmt.Fprintf(&b, "Nothing was recorded: %s\n\n", oneLine(in.Reason))
		fmt.Fprintf(&b, "The current revision is %d, digest %s. To decide, reply with\nAGREE %s (or DISAGREE, or ABSTAIN) on the first line.\n\n",
			in.RevisionNumber, in.RevisionDigest, ShortDigest(in.RevisionDigest))
	}
	b.WriteString("This email carries no secret. Replies count only from the invited address, signed by its\nmail provider (DKIM).\n")
	return b.String()
}
