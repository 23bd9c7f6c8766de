package room

import "strings"

// Operator text reaches two Markdown documents, the revision's Markdown
// and CONSENSUS.md. Single-line fields (title, display names) refuse line
// breaks at input (ValidateLine). Multi-line fields (objective, rules) are
// rendered so that no line of theirs can start a block of its own: a
// heading, a table row or delimiter row, a code fence, an HTML block, a
// quote, a list, a setext underline or a thematic break. Otherwise an
// objective could forge a "## Decisions" table in the record, or open a
// fence that swallows the rest of it.

// markdownText renders multi-line operator text as paragraph lines;
// continuation lines are prefixed with indent (so a rule stays inside its
// list item). CR and CRLF, which Markdown also takes for line breaks, are
// written as LF.
func markdownText(s, indent string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = escapeLineStart(l)
	}
	return strings.Join(lines, "\n"+indent)
}

// escapeLineStart backslash-escapes what could make l start a block: its
// first non-blank character when that is ASCII punctuation (CommonMark
// lets any ASCII punctuation be escaped, and every block marker is one:
// # | ` ~ < > - + * = _ :), or the delimiter of an ordered list marker
// ("1." "1)"). The text reads the same once rendered.
func escapeLineStart(l string) string {
	i := 0
	for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
		i++
	}
	if i == len(l) {
		return l
	}
	if isASCIIPunct(l[i]) {
		return l[:i] + `\` + l[i:]
	}
	j := i
	for j < len(l) && j-i < 10 && l[j] >= '0' && l[j] <= '9' {
		j++
	}
	if j > i && j < len(l) && (l[j] == '.' || l[j] == ')') {
		return l[:j] + `\` + l[j:]
	}
	return l
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

// oneLine collapses whitespace, line breaks included, to single spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// tableCell renders single-line text as one table cell: backslashes and
// pipes are escaped, so neither "|" nor "\|" can end the cell early.
func tableCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(oneLine(s), `\`, `\\`), "|", `\|`)
}
