package reply_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/venue"
	"github.com/consensus-md/consensus/internal/workspace"
)

// TestReplyDecisionCarriedOverKeepsItsEvidence: Alice agrees by reply on
// revision 1; revision 2 changes the terms (her decision goes stale),
// revision 3 restores them (it counts again, carried over); Bob agrees by
// reply on revision 3. CONSENSUS.md states each decision's evidence: the
// carried one keeps its reply's SHA-256 through both new revisions.
func TestReplyDecisionCarriedOverKeepsItsEvidence(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	op := venue.OperatorCall{Principal: workspace.Bootstrap()}
	aliceRaw := signWith(t, f.message("alice@example.test", "carried", "", "text/plain", "7bit", "AGREE "+f.created.RevisionDigest[:12]+"\n"), "example.test", "s1", f.rsaKey)
	if got, err := f.reader.Handle(ctx, aliceRaw, false); err != nil || got != "recorded agree" {
		t.Fatalf("Alice's reply: %q, %v", got, err)
	}
	original, changed := "Decide whether to ship.", "Decide whether to ship on Monday."
	if _, err := f.v.AmendAgreement(ctx, op, f.created.AgreementID, venue.AmendInput{Objective: &changed}); err != nil {
		t.Fatal(err)
	}
	back, err := f.v.AmendAgreement(ctx, op, f.created.AgreementID, venue.AmendInput{Objective: &original})
	if err != nil {
		t.Fatal(err)
	}
	f.inv = mustInvitation(t, f, 1)
	bobRaw := signWith(t, f.message("bob@example.test", "bob-agrees", "", "text/plain", "7bit", "AGREE "+back.RevisionDigest[:12]+"\n"), "example.test", "s1", f.rsaKey)
	if got, err := f.reader.Handle(ctx, bobRaw, false); err != nil || got != "recorded agree" {
		t.Fatalf("Bob's reply: %q, %v", got, err)
	}
	art, err := f.v.Store.ArtifactGet(ctx, uuid.MustParse(f.created.AgreementID))
	if err != nil {
		t.Fatalf("no CONSENSUS.md: %v", err)
	}
	md := string(art.Body)
	if !strings.Contains(md, "| 1 (carried over: same terms) |") {
		t.Fatalf("Alice's decision is not carried over:\n%s", md)
	}
	for i, c := range []struct {
		name, id string
		raw      []byte
	}{{"Alice", "carried", aliceRaw}, {"Bob", "bob-agrees", bobRaw}} {
		sum := sha256.Sum256(c.raw)
		line := fmt.Sprintf("- Participant %s (`%s`): recorded from a reply email: From `%s@example.test`, DKIM d=`example.test` s=`s1`, "+
			"Message-ID `<%s@example.test>`, SHA-256 of the message `%s`\n", c.name, f.created.Participants[i].ParticipantID, strings.ToLower(c.name), c.id, hex.EncodeToString(sum[:]))
		if !strings.Contains(md, line) {
			t.Errorf("CONSENSUS.md lacks %q:\n%s", line, md)
		}
	}
}
