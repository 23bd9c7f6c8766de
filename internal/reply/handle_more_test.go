package reply_test

import (
	"context"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/venue"
)

// TestHandleRevisionsAndRevocation: a reply naming revision 1 after
// revision 2 is locked records nothing and the answer names revision 2; a
// disagreement signed with Ed25519 by a subdomain of the address's domain
// (relaxed alignment) records; a revoked participant's reply records
// nothing and is not answered.
func TestHandleRevisionsAndRevocation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	old := f.created.RevisionDigest[:12]
	objective := "Decide whether to ship on Monday."
	amended, err := f.v.AmendAgreement(ctx, f.created.AgreementID, venue.AmendInput{Objective: &objective})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.reader.Handle(ctx, signWith(t, f.message("alice@example.test", "r1", "", "text/plain", "7bit", "AGREE "+old+"\n"), "example.test", "s1", f.rsaKey), false)
	if err != nil || !strings.Contains(got, "names revision 1, but revision 2 is now current") {
		t.Fatalf("revision 1 after 2: %q, %v", got, err)
	}
	got, err = f.reader.Handle(ctx, signWith(t, f.message("alice@example.test", "r2", "", "text/plain", "7bit", "disagree "+amended.RevisionDigest+"\nNot on a Monday.\n"), "mail.example.test", "ed", f.edKey), false)
	if err != nil || got != "recorded disagree" {
		t.Fatalf("Ed25519 disagreement on revision 2: %q, %v", got, err)
	}
	if _, err := f.v.RevokeParticipant(ctx, f.created.Participants[1].ParticipantID); err != nil {
		t.Fatal(err)
	}
	f.inv = mustInvitation(t, f, 1)
	got, err = f.reader.Handle(ctx, signWith(t, f.message("bob@example.test", "r3", "", "text/plain", "7bit", "AGREE "+amended.RevisionDigest[:12]+"\n"), "example.test", "s1", f.rsaKey), false)
	if err != nil || !strings.HasPrefix(got, "ignored") {
		t.Fatalf("revoked participant: %q, %v", got, err)
	}
	if n := f.answers(t); n != 2 {
		t.Errorf("%d answers, want 2 (the stale digest and the disagreement; none to the revoked)", n)
	}
	ev := f.evidenceOf(t)
	if len(ev) != 1 || ev[0].DKIM.Algorithm != "ed25519-sha256" || ev[0].DKIM.Domain != "mail.example.test" {
		t.Fatalf("evidence: %+v", ev)
	}
}
