package room

import (
	"fmt"
	"strings"
)

// ReplyEvidence is what CONSENSUS.md states of a decision recorded from a
// reply to the invitation email: the sender, the DKIM signature's domain
// and selector, the Message-ID and the SHA-256 of the raw message. The
// signed record carries the whole evidence, which a verifier re-checks.
type ReplyEvidence struct {
	From         string
	DKIMDomain   string
	DKIMSelector string
	MessageID    string
	RawSHA256    string
}

// writeReplies writes, after the decisions table, one line for each listed
// decision recorded from a reply email, in roster order; with none it
// writes nothing, so a record of decisions posted over HTTP is unchanged.
// Each line starts with fixed text; the display name is inline text that
// can open no code span or HTML, and each value, which came from the
// sender's message, is a code span on the line: no text of theirs can start
// a block, end a span early or break the line.
func writeReplies(b *strings.Builder, in ArtifactInput) {
	first := true
	for _, e := range in.Roster {
		if e.Decision == "" || e.Reply == nil {
			continue
		}
		if first {
			b.WriteString("\nDecisions recorded from a reply to the invitation email; the signed record carries each one's DKIM evidence, which a verifier re-checks offline:\n\n")
			first = false
		}
		r := e.Reply
		fmt.Fprintf(b, "- Participant %s (`%s`): recorded from a reply email: From %s, DKIM d=%s s=%s, Message-ID %s, SHA-256 of the message %s\n",
			inlineText(e.Participant.DisplayName), e.Participant.ParticipantID,
			codeSpan(r.From), codeSpan(r.DKIMDomain), codeSpan(r.DKIMSelector), codeSpan(r.MessageID), codeSpan(r.RawSHA256))
	}
}

// inlineText renders single-line text inside a line: as a table cell
// (backslashes and pipes escaped), with backticks and "<" escaped too, so
// that it can open neither a code span nor raw HTML or an autolink that
// would take in the text after it.
func inlineText(s string) string {
	return strings.NewReplacer("`", "\\`", "<", "\\<").Replace(tableCell(s))
}

// codeSpan renders s, collapsed to one line, as an inline code span fenced
// by more backticks than any run inside it; a space pads a value that
// starts or ends with a backtick (CommonMark strips it). An empty value
// is written as "(none)".
func codeSpan(s string) string {
	s = oneLine(s)
	if s == "" {
		return "(none)"
	}
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if s[0] == '`' || s[len(s)-1] == '`' {
		s = " " + s + " "
	}
	return fence + s + fence
}
