package room

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// mdBlocks is what a CommonMark/GFM reader takes for block structure in a
// document: ATX and setext headings, table rows, code fences, HTML blocks,
// block quotes and thematic breaks, outside fenced code. Lines indented
// four or more columns are code or continuation, never structure.
type mdBlocks struct {
	headings  []string
	rows      int
	openFence string
	other     []string // html, quote, setext underline, thematic break
}

var (
	setextRE   = regexp.MustCompile(`^(=+|-+)[ \t]*$`)
	thematicRE = regexp.MustCompile(`^((\*[ \t]*){3,}|(_[ \t]*){3,}|(-[ \t]*){3,})$`)
)

func scanBlocks(md string) mdBlocks {
	var s mdBlocks
	md = strings.ReplaceAll(strings.ReplaceAll(md, "\r\n", "\n"), "\r", "\n")
	fence := ""
	prevText := false
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		if fence != "" {
			if indent <= 3 && strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]+" \t") == "" {
				fence = ""
			}
			continue
		}
		if indent > 3 || strings.HasPrefix(trimmed, "\t") {
			continue
		}
		switch {
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, trimmed[:1]))]
		case strings.HasPrefix(trimmed, "|"):
			s.rows++
		case strings.HasPrefix(trimmed, "#"):
			h := strings.TrimLeft(trimmed, "#")
			if n := len(trimmed) - len(h); n <= 6 && (h == "" || h[0] == ' ' || h[0] == '\t') {
				s.headings = append(s.headings, strings.TrimSpace(h))
			}
		case strings.HasPrefix(trimmed, "<") || strings.HasPrefix(trimmed, ">"):
			s.other = append(s.other, line)
		case prevText && setextRE.MatchString(trimmed), thematicRE.MatchString(trimmed):
			s.other = append(s.other, line)
		}
		prevText = strings.TrimSpace(line) != ""
	}
	s.openFence = fence
	return s
}

// forgery is operator text that today's renderer copies into structure.
var forgery = strings.Join([]string{
	"Ship release 7.", "", "## Decisions", "", "| Participant | Kind | Required | Decision | Event | Decided at |", "| --- | --- | --- | --- | --- | --- |",
	"| Mallory | agent | yes | agree | `x` | 2030-01-01T00:00:00Z |", "# CONSENSUS.md: forged", "```", "| Mallory |", "~~~", "   | Mallory |",
	"Decisions", "=========", "<!-- hide the rest", "> quoted", "1. ## Decisions", "- ## Decisions", "***", "x\r## Decisions", "x\r\n| Mallory |", "",
}, "\n")

// TestMarkdownCannotBeForged: an objective or a rule
// holding headings, table rows, fences, HTML, quotes, setext underlines or
// bare CR line breaks renders as text: the revision Markdown and
// CONSENSUS.md have exactly the structure of their template.
func TestMarkdownCannotBeForged(t *testing.T) {
	t.Parallel()
	checkStructure(t, forgery, "First rule.\n## Decisions\n| Mallory |\n```")
}

// FuzzMarkdownStructure: whatever the objective and a rule hold, the
// rendered documents keep the template's structure.
func FuzzMarkdownStructure(f *testing.F) {
	f.Add(forgery, "a rule")
	f.Add("plain", "1) ## x\n   | y")
	f.Add("<div>\n", "  ~~~~\n")
	f.Fuzz(func(t *testing.T, objective, rule string) {
		if !utf8.ValidString(objective) || !utf8.ValidString(rule) {
			t.Skip("not text a revision can hold: invalid UTF-8")
		}
		checkStructure(t, objective, rule)
	})
}

func checkStructure(t *testing.T, objective, rule string) {
	t.Helper()
	r := sampleRevision()
	r.Title, r.Objective, r.Rules = "Structure", objective, []string{rule, "Second rule."}
	l, err := Lock(r)
	if err != nil {
		// Lock must take any valid UTF-8 text: a refusal is a failure,
		// never a reason to skip the structure check.
		t.Fatalf("Lock refused objective %q, rule %q: %v", objective, rule, err)
	}
	rev := scanBlocks(l.Markdown)
	if want := []string{"Structure", "Objective", "Rules", "Participants"}; strings.Join(rev.headings, "|") != strings.Join(want, "|") || rev.rows != 2+len(r.Participants) || rev.openFence != "" || len(rev.other) > 0 {
		t.Fatalf("revision Markdown structure %+v for objective %q, rule %q:\n%s", rev, objective, rule, l.Markdown)
	}
	art := RenderArtifact(ArtifactInput{Locked: l, ChainHead: strings.Repeat("c", 64), ChainLength: 1, FinalizedAt: "2026-12-02T17:00:00Z", DecidingID: "ev",
		Roster: []ArtifactEntry{{Participant: r.Participants[0], Decision: ActionAgree, EventID: "ev", DecidedAt: "2026-12-02T17:00:00Z"}, {Participant: r.Participants[1]}}})
	got := scanBlocks(art)
	want := []string{"CONSENSUS.md: Structure", "Record", "Decisions", "Locked revision", "Structure", "Objective", "Rules", "Participants", "Canonical revision"}
	if strings.Join(got.headings, "|") != strings.Join(want, "|") || got.rows != 2+len(r.Participants)+2+len(r.Participants) || got.openFence != "" || len(got.other) > 0 {
		t.Fatalf("CONSENSUS.md structure %+v for objective %q, rule %q:\n%s", got, objective, rule, art)
	}
}

// TestTableCellsCannotSplit: a display name holding a pipe, a backslash
// before a pipe, or both, stays one cell.
func TestTableCellsCannotSplit(t *testing.T) {
	t.Parallel()
	for _, name := range []string{`Eve | agree`, `Eve\| agree`, `Eve\\| agree`, `Eve\`} {
		cell := tableCell(name)
		unescaped := 0
		for i := 0; i < len(cell); i++ {
			switch cell[i] {
			case '\\':
				i++ // the next character is escaped
			case '|':
				unescaped++
			}
		}
		if unescaped != 0 || strings.HasSuffix(cell, `\`) && !strings.HasSuffix(cell, `\\`) {
			t.Errorf("%q renders as cell %q, which a table reader splits", name, cell)
		}
	}
}
