package reply_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/venue"
	"github.com/consensus-md/consensus/internal/workspace"
	"github.com/google/uuid"
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
	amended, err := f.v.AmendAgreement(ctx, venue.OperatorCall{Principal: workspace.Bootstrap()}, f.created.AgreementID, venue.AmendInput{Objective: &objective})
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
	if _, err := f.v.RevokeParticipant(ctx, venue.OperatorCall{Principal: workspace.Bootstrap()}, f.created.Participants[1].ParticipantID); err != nil {
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

// TestReplyAfterClaimInBrowser: a person who claimed her place on the
// invitation page can still decide by replying; the reply posts with the
// token her claim bound, and the claim keeps its assurance.
func TestReplyAfterClaimInBrowser(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	secretOf, proofOf := f.credentials(t)
	id := f.created.Participants[0].InvitationID
	ex, err := f.v.Exchange(ctx, "human", id, secretOf[id])
	if err != nil {
		t.Fatal(err)
	}
	g, err := f.v.AuthSession(ctx, "human", id, ex.SessionToken)
	if err != nil {
		t.Fatal(err)
	}
	proof := proofOf[id]
	claimed, err := f.v.Claim(ctx, g, venue.ClaimInput{EmailProof: &proof})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.reader.Handle(ctx, signWith(t, f.message("alice@example.test", "after-claim", "", "text/plain", "7bit", "ABSTAIN "+f.created.RevisionDigest[:12]+"\n"), "example.test", "s1", f.rsaKey), false)
	if err != nil || got != "recorded abstain" {
		t.Fatalf("reply after a claim: %q, %v", got, err)
	}
	p, err := f.v.AuthParticipant(ctx, "human", id, claimed.ParticipantToken)
	if err != nil {
		t.Fatal(err)
	}
	view, err := f.v.Room(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(view.Events) != 1 || view.Events[0].Action != "abstain" || len(view.Events[0].Evidence) == 0 {
		t.Fatalf("room events %+v", view.Events)
	}
}

// credentials opens the queued invitation emails and returns each
// invitation's secret and proof, as its recipient would read them.
func (f *fixture) credentials(t *testing.T) (secrets, proofs map[string]string) {
	t.Helper()
	ctx := context.Background()
	secrets, proofs = map[string]string{}, map[string]string{}
	queued, err := f.v.Store.OutboxListByAgreement(ctx, uuid.MustParse(f.created.AgreementID))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queued {
		if q.Kind != store.OutboxInvitation {
			continue
		}
		m, err := f.v.Store.OutboxGet(ctx, q.ID)
		if err != nil {
			t.Fatal(err)
		}
		body, err := f.keys.Open(m.SealedBody, m.ID[:])
		if err != nil {
			t.Fatal(err)
		}
		if s := regexp.MustCompile(`#secret=([A-Za-z0-9_-]+)`).FindStringSubmatch(string(body)); s != nil {
			secrets[m.InvitationID.String()] = s[1]
		}
		if p := regexp.MustCompile(`Your proof code: (\S+)`).FindStringSubmatch(string(body)); p != nil {
			proofs[m.InvitationID.String()] = p[1]
		}
	}
	if len(secrets) != len(f.created.Participants) {
		t.Fatalf("%d invitation emails with a secret, want %d", len(secrets), len(f.created.Participants))
	}
	return secrets, proofs
}
