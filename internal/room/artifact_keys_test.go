package room

import (
	"strings"
	"testing"
)

// TestRenderArtifactMarksSignedDecisions: each decision that counts and
// was signed with the participant's bound key gets one line after the
// decisions table naming the key's thumbprint, in roster order; a key
// without a counted decision is not stated, and a record without signed
// decisions is byte for byte what it was.
func TestRenderArtifactMarksSignedDecisions(t *testing.T) {
	t.Parallel()
	r := sampleRevision()
	l, err := Lock(r)
	if err != nil {
		t.Fatal(err)
	}
	p0, p1 := l.Revision.Participants[0], l.Revision.Participants[1]
	const k0, k1 = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs", "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
	table := "| " + p0.DisplayName + " (`" + p0.ParticipantID + "`) | agent | yes | agree | `ev-2` | 2026-12-02T17:00:00Z |\n"
	intro := "\nDecisions signed with the participant's own Ed25519 key, bound when it claimed its slot; the signed record carries each signature and key, which a verifier re-checks offline:\n\n"
	line0 := "- Participant " + p0.DisplayName + " (`" + p0.ParticipantID + "`): agree signed with the key of RFC 7638 thumbprint `" + k0 + "`\n"
	line1 := "- Participant " + p1.DisplayName + " (`" + p1.ParticipantID + "`): disagree signed with the key of RFC 7638 thumbprint `" + k1 + "`\n"
	render := func(e0, e1 ArtifactEntry) string {
		e0.Participant, e1.Participant = p0, p1
		return RenderArtifact(ArtifactInput{Locked: l, ChainHead: strings.Repeat("c", 64), ChainLength: 3, FinalizedAt: "2026-12-02T17:00:00Z", DecidingID: "ev-2",
			Roster: []ArtifactEntry{e0, e1}})
	}
	agree := ArtifactEntry{Decision: ActionAgree, EventID: "ev-2", DecidedAt: "2026-12-02T17:00:00Z"}
	plain := render(agree, ArtifactEntry{})
	keyed := agree
	keyed.KeyThumbprint = k0
	for _, c := range []struct {
		name   string
		e0, e1 ArtifactEntry
		lines  string // "" when nothing is stated
	}{
		{"no key", agree, ArtifactEntry{}, ""},
		{"a key without a counted decision", agree, ArtifactEntry{KeyThumbprint: k1}, ""},
		{"one signed decision", keyed, ArtifactEntry{}, line0},
		{"two, in roster order", keyed, ArtifactEntry{Decision: ActionDisagree, EventID: "ev-1", DecidedAt: "2026-12-02T16:00:00Z", KeyThumbprint: k1}, line0 + line1},
	} {
		md := render(c.e0, c.e1)
		if c.lines == "" {
			if c.e1.Decision == "" && md != plain {
				t.Errorf("%s: the record changed:\n%s", c.name, md)
			}
			continue
		}
		if !strings.Contains(md, "|\n"+intro+c.lines+"\n## Locked revision\n") || !strings.Contains(md, table) {
			t.Errorf("%s: the record does not state the signed decisions after its table:\n%s", c.name, md)
		}
		if c.e1.Decision == "" && strings.Replace(md, intro+c.lines, "", 1) != plain {
			t.Errorf("%s: the lines changed more of the record than their own", c.name)
		}
	}
}

// TestSignedLineCannotBeForged: a display name cannot end the line, open a
// code span or start a block on the line that names the key.
func TestSignedLineCannotBeForged(t *testing.T) {
	t.Parallel()
	for _, name := range replyForgery {
		r := sampleRevision()
		r.Participants[0].DisplayName = name
		l, err := Lock(r)
		if err != nil {
			continue // a name Lock refuses never reaches a record
		}
		md := RenderArtifact(ArtifactInput{Locked: l, ChainHead: strings.Repeat("c", 64), ChainLength: 1, FinalizedAt: "2026-12-02T17:00:00Z", DecidingID: "ev",
			Roster: []ArtifactEntry{{Participant: l.Revision.Participants[0], Decision: ActionAgree, EventID: "ev", DecidedAt: "2026-12-02T17:00:00Z", KeyThumbprint: "abc"}}})
		_, after, _ := strings.Cut(md, "Decisions signed with")
		line, _, _ := strings.Cut(after[strings.Index(after, "- Participant"):], "\n")
		if !strings.HasSuffix(line, "signed with the key of RFC 7638 thumbprint `abc`") || strings.Count(line, "`") != strings.Count(inlineText(name), "`")+4 {
			t.Errorf("display name %q: the signed line is %q", name, line)
		}
	}
}
