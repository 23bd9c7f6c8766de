package room

import (
	"regexp"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/canon"
)

// TestArtifactCarriesTheCanonicalRevision: CONSENSUS.md holds the canonical
// revision JSON verbatim, whatever backticks the operator wrote, and the
// bytes between its fences hash to the revision digest it states.
func TestArtifactCarriesTheCanonicalRevision(t *testing.T) {
	t.Parallel()
	for _, title := range []string{"Plain title", "Ship ```json\n{\"x\":1}\n``` & <more>", "Ten ``````````"} {
		locked, err := Lock(Revision{
			Schema: "https://consensus.md/schemas/agreement/v1", AgreementID: "3f0c2b9e-8d4a-4e61-9b7c-5a2d1e0f3c4b", Revision: 1,
			Title: title, Objective: "Line one\n```\n## Forged heading", Rules: []string{"Zoë's rule\u2028with a separator"},
			Participants: []Participant{{ParticipantID: "1b2c3d4e-5f60-4718-9a0b-c1d2e3f40516", DisplayName: "Zoë", Kind: KindAgent, Required: true}},
			DecisionRule: DecisionRule, Deadline: "2026-12-31T00:00:00Z", LockedAt: "2026-09-01T12:00:00Z", Issuer: "https://consensus.md",
		})
		if err != nil {
			t.Fatal(err)
		}
		md := RenderArtifact(ArtifactInput{Locked: locked, ChainHead: canon.ZeroHash})
		m := regexp.MustCompile("(?s)\n## Canonical revision\n.*?\n(`{3,})json\n(.*?)\n(`{3,})\n$").FindStringSubmatch(md)
		if m == nil || m[1] != m[3] {
			t.Fatalf("%q: no canonical block closing the file:\n%s", title, md)
		}
		if strings.Contains(m[2], "\n") || strings.Contains(m[2], m[1]) {
			t.Fatalf("%q: the block spans lines or holds its own fence", title)
		}
		if m[2] != string(locked.Canonical) || canon.Digest([]byte(m[2])) != locked.RevisionDigest {
			t.Fatalf("%q: the block is not the canonical revision", title)
		}
		if !strings.Contains(md, "`"+locked.RevisionDigest+"`") {
			t.Fatalf("%q: the revision digest is not stated", title)
		}
	}
}
