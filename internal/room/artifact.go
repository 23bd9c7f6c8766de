package room

import (
	"fmt"
	"strings"
)

// ArtifactEntry is one roster line of CONSENSUS.md.
type ArtifactEntry struct {
	Participant Participant
	Decision    string // agree, disagree, abstain or "" (none)
	EventID     string
	DecidedAt   string
	// Revision is the revision the decision was made on (0: none).
	Revision int
	// Reply is the evidence of a decision recorded from a reply email, nil
	// for one posted over HTTP.
	Reply *ReplyEvidence
	// KeyThumbprint is the RFC 7638 thumbprint of the key the participant
	// bound at claim, which signed the decision; empty for a decision
	// without a participant's signature.
	KeyThumbprint string
}

// ArtifactInput is everything CONSENSUS.md states.
type ArtifactInput struct {
	Locked      Locked
	Roster      []ArtifactEntry
	ChainHead   string
	ChainLength int64
	FinalizedAt string
	DecidingID  string
	// Revisions lists every locked revision, oldest first. With more than
	// one, the record states each and which decisions were carried over;
	// with one (or none given) it is the record of a single revision.
	Revisions []ArtifactRevision
}

// RenderArtifact renders CONSENSUS.md for a reached agreement. The bytes are
// stored once at finalization and served unchanged.
func RenderArtifact(in ArtifactInput) string {
	r := in.Locked.Revision
	var b strings.Builder
	fmt.Fprintf(&b, "# CONSENSUS.md: %s\n\n", oneLine(r.Title))
	b.WriteString(outcomeLine(in))
	b.WriteString("This file is a record kept by the Consensus server that issued it. It is not a signature by any participant, ")
	b.WriteString("not proof of identity, not an independent timestamp and not an authorization to execute anything it describes.\n\n")
	b.WriteString("## Record\n\n")
	fmt.Fprintf(&b, "- Issuer: %s\n", r.Issuer)
	fmt.Fprintf(&b, "- Agreement: `%s`\n", r.AgreementID)
	fmt.Fprintf(&b, "- Revision: %d\n", r.Revision)
	fmt.Fprintf(&b, "- Revision digest (SHA-256 of the canonical agreement/v1 JSON): `%s`\n", in.Locked.RevisionDigest)
	fmt.Fprintf(&b, "- Markdown digest (SHA-256 of the revision Markdown): `%s`\n", in.Locked.MarkdownDigest)
	fmt.Fprintf(&b, "- Decision rule: %s\n", RuleLine(r))
	fmt.Fprintf(&b, "- Deciding event: `%s`\n", in.DecidingID)
	fmt.Fprintf(&b, "- Event chain head: `%s` (%d events)\n", in.ChainHead, in.ChainLength)
	fmt.Fprintf(&b, "- Finalized at: %s\n\n", in.FinalizedAt)
	b.WriteString("## Decisions\n\n")
	writeDecisions(&b, in)
	writeReplies(&b, in)
	writeSigned(&b, in)
	writeRevisions(&b, in)
	b.WriteString("\n## Locked revision\n\n")
	b.WriteString("The revision as locked, rendered as its Markdown is with headings one level down:\n\n")
	// Rendered again from the canonical revision rather than copied from
	// the stored Markdown: a revision locked before operator text was
	// escaped must not bring a forged heading or row into the record.
	b.WriteString(renderRevision(r, "##"))
	writeCanonical(&b, in.Locked.Canonical)
	return b.String()
}

// writeCanonical appends the canonical revision JSON verbatim, so the file
// alone lets anyone recompute the revision digest.
// It is one line (RFC 8785 escapes line breaks), fenced by more backticks
// than any run inside it, so no text of the revision can end the block.
func writeCanonical(b *strings.Builder, canonical []byte) {
	if len(canonical) == 0 {
		return
	}
	fence := strings.Repeat("`", max(3, longestRun(string(canonical), '`')+1))
	b.WriteString("\n## Canonical revision\n\n")
	b.WriteString("The agreement/v1 object exactly as hashed, on the one line between the fences: the SHA-256 of those bytes (UTF-8, no line break) is the revision digest stated above.\n\n")
	b.WriteString(fence + "json\n")
	b.Write(canonical)
	b.WriteString("\n" + fence + "\n")
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}
