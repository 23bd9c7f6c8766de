package room

import (
	"strings"
	"testing"
)

// replyArtifact renders a record whose first participant, named name,
// agreed by a reply email with evidence ev.
func replyArtifact(t testing.TB, name string, ev *ReplyEvidence) (string, Locked) {
	t.Helper()
	r := sampleRevision()
	r.Participants[0].DisplayName = name
	l, err := Lock(r)
	if err != nil {
		t.Fatal(err)
	}
	return RenderArtifact(ArtifactInput{Locked: l, ChainHead: strings.Repeat("c", 64), ChainLength: 3, FinalizedAt: "2026-12-02T17:00:00Z", DecidingID: "ev-2",
		Roster: []ArtifactEntry{
			{Participant: l.Revision.Participants[0], Decision: ActionAgree, EventID: "ev-2", DecidedAt: "2026-12-02T17:00:00Z", Reply: ev},
			// Evidence without a decision that counts is not stated.
			{Participant: l.Revision.Participants[1], Reply: &ReplyEvidence{From: "stale@example.org"}},
		}}), l
}

// TestRenderArtifactStatesReplyEvidence: a decision recorded from a reply
// email gets one line after the decisions table naming its sender, DKIM
// domain and selector, Message-ID and the message's SHA-256; without one
// the record is byte for byte what it was.
func TestRenderArtifactStatesReplyEvidence(t *testing.T) {
	t.Parallel()
	sum := strings.Repeat("ab", 32)
	md, l := replyArtifact(t, "Dee", &ReplyEvidence{From: "dee@example.org", DKIMDomain: "mail.example.org", DKIMSelector: "sel2026",
		MessageID: "<agree@example.org>", RawSHA256: sum})
	table := "| Dee (`" + l.Revision.Participants[0].ParticipantID + "`) | agent | yes | agree | `ev-2` | 2026-12-02T17:00:00Z |\n" +
		"| Observer (`" + l.Revision.Participants[1].ParticipantID + "`) | human | no | none | - | - |\n"
	want := table + "\nDecisions recorded from a reply to the invitation email; the signed record carries each one's DKIM evidence, which a verifier re-checks offline:\n\n" +
		"- Participant Dee (`" + l.Revision.Participants[0].ParticipantID + "`): recorded from a reply email: From `dee@example.org`, " +
		"DKIM d=`mail.example.org` s=`sel2026`, Message-ID `<agree@example.org>`, SHA-256 of the message `" + sum + "`\n\n## Locked revision\n"
	if !strings.Contains(md, want) {
		t.Fatalf("the record lacks the reply line:\n%s", md)
	}
	plain, _ := replyArtifact(t, "Dee", nil)
	if strings.Contains(plain, "reply") || !strings.Contains(plain, table+"\n## Locked revision\n") {
		t.Fatalf("a record without reply decisions changed:\n%s", plain)
	}
	if strings.Replace(md, want, table+"\n## Locked revision\n", 1) != plain {
		t.Fatal("the reply line changed more of the record than its own lines")
	}
}

// replyForgery is text a sender controls in its message (From, DKIM tags,
// Message-ID) or an operator in a display name, trying to end the line,
// start a block or take in the text after it.
var replyForgery = []string{
	"x\n## Decisions\n| Mallory | agent | yes | agree |",
	"x` and `y", "``", "`", "a ``` b", "x\r\n# CONSENSUS.md: forged\r\n```",
	"<!-- hide", "<a title='", "<https://evil.example>", "\\`", "\\", "- ## x", "1. x",
	"x\u2028## y", "|", "*",
}

// TestReplyEvidenceCannotBeForged: whatever the evidence and the display
// name hold, the record keeps its template's headings and table rows, the
// reply section is one line, and its code spans read back as exactly the
// five values, collapsed to one line.
func TestReplyEvidenceCannotBeForged(t *testing.T) {
	t.Parallel()
	for _, f := range replyForgery {
		checkReplyStructure(t, f, ReplyEvidence{From: f, DKIMDomain: f + "d", DKIMSelector: "s" + f, MessageID: f, RawSHA256: f})
	}
}

// FuzzReplyEvidence: the same for any name and values.
func FuzzReplyEvidence(f *testing.F) {
	for _, s := range replyForgery {
		f.Add(s, s, s)
	}
	f.Fuzz(func(t *testing.T, name, from, messageID string) {
		checkReplyStructure(t, name, ReplyEvidence{From: from, DKIMDomain: "example.org", DKIMSelector: messageID, MessageID: messageID, RawSHA256: from})
	})
}

func checkReplyStructure(t *testing.T, name string, ev ReplyEvidence) {
	t.Helper()
	md, _ := replyArtifact(t, name, &ev)
	plain, _ := replyArtifact(t, name, nil)
	got, want := scanBlocks(md), scanBlocks(plain)
	if strings.Join(got.headings, "|") != strings.Join(want.headings, "|") || got.rows != want.rows || got.openFence != "" || len(got.other) != len(want.other) {
		t.Fatalf("structure %+v, want %+v, for name %q, evidence %+v:\n%s", got, want, name, ev, md)
	}
	_, rest, _ := strings.Cut(md, "re-checks offline:\n\n")
	line, rest, _ := strings.Cut(rest, "\n")
	if !strings.HasPrefix(rest, "\n## Locked revision\n") || !strings.HasPrefix(line, "- Participant ") {
		t.Fatalf("the reply section is not one line for name %q, evidence %+v:\n%s", name, ev, md)
	}
	spans, html := inlineSpans(line)
	// An empty value is written as "(none)", not as a span.
	filtered := []string{"9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a"}
	for _, s := range []string{ev.From, ev.DKIMDomain, ev.DKIMSelector, ev.MessageID, ev.RawSHA256} {
		if s = oneLine(s); s != "" {
			filtered = append(filtered, s)
		}
	}
	if strings.Join(spans, "\x00") != strings.Join(filtered, "\x00") || html {
		t.Fatalf("line %q reads as spans %q (raw HTML %v), want %q", line, spans, html, filtered)
	}
}

// inlineSpans reads the code spans of a CommonMark line, and whether a "<"
// outside them could start raw HTML or an autolink: a backslash outside a
// span escapes the next character; a run of n backticks opens a span that
// the next run of exactly n closes (else it is literal); one space is
// stripped from each side of content that has both and is not all spaces.
func inlineSpans(line string) (spans []string, html bool) {
	for i := 0; i < len(line); {
		switch line[i] {
		case '\\':
			i += 2
			continue
		case '<':
			html = true
		case '`':
			n := 0
			for i+n < len(line) && line[i+n] == '`' {
				n++
			}
			end := -1
			for j := i + n; j < len(line); {
				if line[j] != '`' {
					j++
					continue
				}
				m := 0
				for j+m < len(line) && line[j+m] == '`' {
					m++
				}
				if m == n {
					end = j
					break
				}
				j += m
			}
			if end < 0 {
				i += n
				continue
			}
			c := line[i+n : end]
			if len(c) >= 2 && c[0] == ' ' && c[len(c)-1] == ' ' && strings.Trim(c, " ") != "" {
				c = c[1 : len(c)-1]
			}
			spans = append(spans, c)
			i = end + n
			continue
		}
		i++
	}
	return spans, html
}
