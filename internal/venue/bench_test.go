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

// The server side of the hot paths, without HTTP: what make bench's
// profiles attribute to the venue, the store and pgx, in allocations per
// operation (steady on a shared machine, where times are not).

// benchRoom is an agreement of n claimed participants.
type benchRoom struct {
	v      *Venue
	digest string
	creds  []ParticipantCredential
	tokens []string
	invs   []string
}

func newBenchRoom(b *testing.B, n int) *benchRoom {
	b.Helper()
	ctx := context.Background()
	st := pgtest.Store(b)
	batcher := batch.New(st) // as the daemon runs it
	b.Cleanup(batcher.Close)
	keys, err := secret.DeriveKeys(make([]byte, 32))
	if err != nil {
		b.Fatal(err)
	}
	v := &Venue{Store: st, Batch: batcher, Keys: keys, Origin: "https://consensus.test", Now: time.Now}
	req := true
	in := CreateInput{Title: "Bench", Objective: "Measure.", Deadline: time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)}
	for i := range n {
		in.Participants = append(in.Participants, ParticipantInput{DisplayName: fmt.Sprintf("P%d", i), Kind: "agent",
			Email: fmt.Sprintf("p%d@agents.example", i), Required: &req})
	}
	c, err := v.CreateAgreement(ctx, OperatorCall{Principal: workspace.Bootstrap()}, in)
	if err != nil {
		b.Fatal(err)
	}
	r := &benchRoom{v: v, digest: c.RevisionDigest}
	for i, p := range c.Participants {
		token := fmt.Sprintf("csp_bench-token-%04d-%s", i, uuid.NewString())
		ok, err := st.ParticipantClaim(ctx, uuid.MustParse(p.ParticipantID), store.Claim{BindingJSON: "{}", BindingDigest: token,
			TokenHash: secret.Hash(token), ClaimedAt: time.Now()})
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		r.creds = append(r.creds, NewParticipantCredential(room.KindAgent, p.InvitationID, token))
		r.tokens, r.invs = append(r.tokens, token), append(r.invs, p.InvitationID)
	}
	return r
}

func (r *benchRoom) comment(b *testing.B, i int) {
	action, body, rev := "comment", "a comment about as long as the bench sends", 1
	if _, created, err := r.v.PostEventAs(context.Background(), r.creds[i%len(r.creds)], fmt.Sprintf("bench-%08d", i), nil,
		EventInput{Action: &action, Body: &body, Revision: &rev, Digest: &r.digest}); err != nil || !created {
		b.Fatal(created, err)
	}
}

// BenchmarkAppend: one comment (two round trips) in a room of 50.
func BenchmarkAppend(b *testing.B) {
	r := newBenchRoom(b, 50)
	r.comment(b, 0) // warm the revision cache and the statements
	b.ReportAllocs()
	b.ResetTimer()
	for i := 1; b.Loop(); i++ {
		r.comment(b, i)
	}
}

// BenchmarkRoomNotModified: what a 304 costs the server: the credential
// lookup and the ETag.
func BenchmarkRoomNotModified(b *testing.B) {
	r := newBenchRoom(b, 50)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p, err := r.v.AuthParticipant(ctx, room.KindAgent, r.invs[0], r.tokens[0])
		if err != nil {
			b.Fatal(err)
		}
		_ = r.v.RoomTag(p)
	}
}

// BenchmarkRoomBody: a full read of a cached room of 300 events, up to
// the parts the HTTP layer encodes.
func BenchmarkRoomBody(b *testing.B) {
	r := newBenchRoom(b, 50)
	for i := range 300 {
		r.comment(b, i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p, err := r.v.AuthParticipant(ctx, room.KindAgent, r.invs[1], r.tokens[1])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.v.RoomParts(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}
