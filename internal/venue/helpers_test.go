package venue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/batch"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/workspace"
)

// testRoom is an agreement of n claimed participants on a venue that
// batches its appends, as the daemon's does.
type testRoom struct {
	v      *Venue
	digest string
	creds  []ParticipantCredential
	tokens []string // each participant's token, in roster order
	invs   []string // each participant's invitation id
}

func newTestRoom(t testing.TB, n int) *testRoom {
	t.Helper()
	st := pgtest.Store(t)
	b := batch.New(st)
	t.Cleanup(b.Close)
	keys, err := secret.DeriveKeys(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	v := &Venue{Store: st, Batch: b, Keys: keys, Origin: "https://consensus.test", Now: time.Now}
	return addTestRoom(t, v, n)
}

// addTestRoom creates another agreement of n claimed participants on v.
func addTestRoom(t testing.TB, v *Venue, n int) *testRoom {
	t.Helper()
	ctx := context.Background()
	req := true
	in := CreateInput{Title: "Test", Objective: "Post.", Deadline: time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)}
	for i := range n {
		in.Participants = append(in.Participants, ParticipantInput{DisplayName: fmt.Sprintf("P%d", i), Kind: "agent",
			Email: fmt.Sprintf("p%d@agents.example", i), Required: &req})
	}
	c, err := v.CreateAgreement(ctx, OperatorCall{Principal: workspace.Bootstrap()}, in)
	if err != nil {
		t.Fatal(err)
	}
	r := &testRoom{v: v, digest: c.RevisionDigest}
	for i, p := range c.Participants {
		token := fmt.Sprintf("csp_test-token-%04d-%s", i, uuid.NewString())
		ok, err := v.Store.ParticipantClaim(ctx, uuid.MustParse(p.ParticipantID), store.Claim{BindingJSON: "{}", BindingDigest: token,
			TokenHash: secret.Hash(token), ClaimedAt: time.Now()})
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		r.creds = append(r.creds, NewParticipantCredential(room.KindAgent, p.InvitationID, token))
		r.tokens, r.invs = append(r.tokens, token), append(r.invs, p.InvitationID)
	}
	return r
}

// comment posts a comment as participant i (modulo the roster) under key,
// failing the test unless it is stored.
func (r *testRoom) comment(t testing.TB, i int, key string) {
	t.Helper()
	if err := r.post(i, key); err != nil {
		t.Fatal(err)
	}
}

// post posts a comment as participant i (modulo the roster) under key: an
// error unless it is stored. Safe on any goroutine.
func (r *testRoom) post(i int, key string) error {
	action, body, rev := "comment", "a comment about as long as the bench sends", 1
	_, created, err := r.v.PostEventAs(context.Background(), r.creds[i%len(r.creds)], key, nil,
		EventInput{Action: &action, Body: &body, Revision: &rev, Digest: &r.digest})
	if err == nil && !created {
		err = fmt.Errorf("comment %s: not created", key)
	}
	return err
}
