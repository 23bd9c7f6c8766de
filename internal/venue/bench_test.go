package venue

import (
	"context"
	"fmt"
	"testing"

	"github.com/consensus-md/consensus/internal/room"
)

// The server side of the hot paths, without HTTP: what make bench's
// profiles attribute to the venue, the store and pgx, in allocations per
// operation (steady on a shared machine, where times are not).

// BenchmarkAppend: one comment (two round trips) in a room of 50.
func BenchmarkAppend(b *testing.B) {
	r := newTestRoom(b, 50)
	r.comment(b, 0, fmt.Sprintf("bench-%08d", 0)) // warm the revision cache and the statements
	b.ReportAllocs()
	b.ResetTimer()
	for i := 1; b.Loop(); i++ {
		r.comment(b, i, fmt.Sprintf("bench-%08d", i))
	}
}

// BenchmarkRoomNotModified: what a 304 costs the server: the credential
// lookup and the ETag.
func BenchmarkRoomNotModified(b *testing.B) {
	r := newTestRoom(b, 50)
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
	r := newTestRoom(b, 50)
	for i := range 300 {
		r.comment(b, i, fmt.Sprintf("bench-%08d", i))
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
