package venue

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// TestRoomCacheStaysWithinItsLimit: entries are evicted least recently
// used first until the cache fits; an entry larger than the whole limit is
// not kept; what a request still holds after an eviction no longer counts.
func TestRoomCacheStaysWithinItsLimit(t *testing.T) {
	t.Parallel()
	c := newRoomCache(1000)
	ids := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	grow := func(id uuid.UUID, n int) *cachedRoom {
		e := c.entry(id)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.resize(e, n)
		return e
	}
	grow(ids[0], 400)
	grow(ids[1], 400)
	c.entry(ids[0]) // used again: ids[1] is now the least recent
	grow(ids[2], 400)
	if _, ok := c.rooms[ids[1]]; ok || c.bytes != 800 || len(c.rooms) != 2 {
		t.Fatalf("after overflowing: %d bytes in %d rooms, the least recent kept: %v", c.bytes, len(c.rooms), ok)
	}
	big := grow(uuid.New(), 1500)
	if _, ok := c.rooms[big.id]; ok || c.bytes > c.limit {
		t.Fatalf("a room larger than the limit is kept: %d bytes", c.bytes)
	}
	grow(big.id, 0)                    // entry() made a fresh one
	evicted := &cachedRoom{id: ids[1]} // held by a request after its eviction
	c.mu.Lock()
	c.resize(evicted, 10_000)
	c.mu.Unlock()
	if c.bytes > c.limit {
		t.Fatalf("an evicted entry still counts: %d bytes", c.bytes)
	}
}

// TestRevisionKeepsTheNewest: a later revision replaces an earlier one,
// never the other way round.
func TestRevisionKeepsTheNewest(t *testing.T) {
	t.Parallel()
	c := newRoomCache(0)
	id := uuid.New()
	for _, n := range []int{2, 1} {
		history := []store.RevisionSummary{{Number: 1}, {Number: 2}}
		if _, err := c.keepRevision(store.Revision{AgreementID: id, Number: n, Canonical: []byte(`{}`), History: history}); err != nil {
			t.Fatal(err)
		}
	}
	if r := c.revision(id); r == nil || r.Number != 2 {
		t.Fatalf("cached revision %+v", r)
	}
}

// TestRoomCacheChargesTheJoinedCopyOnceMade: a snapshot counts its joined
// copy (RoomParts.Shared) only once a full read made it, so rooms read only
// through the feed and streams fit twice as many; a snapshot already
// replaced is no longer charged.
func TestRoomCacheChargesTheJoinedCopyOnceMade(t *testing.T) {
	t.Parallel()
	c := newRoomCache(1000)
	id := uuid.New()
	e := c.entry(id)
	replace := func(s *roomSnapshot) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.resize(e, s.cost()-e.snap.cost())
		e.snap = s
	}
	first := &roomSnapshot{agreement: store.Agreement{ID: id, Version: 1}, rosterJS: make([]byte, 10)}
	replace(first)
	if c.bytes != 10 {
		t.Fatalf("a snapshot no full read used counts %d bytes, want its roster's 10", c.bytes)
	}
	c.charge(first, 300)
	if c.bytes != 310 {
		t.Fatalf("after its joined copy: %d bytes, want 310", c.bytes)
	}
	replace(&roomSnapshot{agreement: store.Agreement{ID: id, Version: 2}, rosterJS: make([]byte, 10)})
	if c.bytes != 10 {
		t.Fatalf("after a newer snapshot: %d bytes, want 10", c.bytes)
	}
	c.charge(first, 300) // a request still joining the old version
	if c.bytes != 10 {
		t.Fatalf("a replaced snapshot was charged: %d bytes", c.bytes)
	}
}

// TestRoomForGrowsByAnEighth: a room's events grow in place while they
// fit, and otherwise into an array an eighth larger than needed, with
// what was there kept.
func TestRoomForGrowsByAnEighth(t *testing.T) {
	t.Parallel()
	s := make([]byte, 800, 900)
	if got := roomFor(s, 100); &got[0] != &s[0] || cap(got) != 900 {
		t.Fatalf("grew although it fit: cap %d", cap(got))
	}
	s[799] = 7
	got := roomFor(s, 101)
	if len(got) != 800 || cap(got) != 901+901/8 || got[799] != 7 {
		t.Fatalf("len %d, cap %d (want %d), last %d", len(got), cap(got), 901+901/8, got[799])
	}
	if e := (cachedRoom{events: got, marks: make([]eventMark, 0, 3)}); e.held() != cap(got)+3*markSize {
		t.Fatalf("held %d, want the capacity %d", e.held(), cap(got)+3*markSize)
	}
}

// TestRoomCacheStatsCountReads: on a real store, a room's first read is
// whole, a read of the same version a hit, a read after a new event a
// tail; a feed read makes no joined copy and a full read's copy counts.
func TestRoomCacheStatsCountReads(t *testing.T) {
	t.Parallel()
	r := newTestRoom(t, 2)
	ctx := context.Background()
	r.comment(t, 1, "stats-0001") // a room with events: the next read can take only the newer ones
	p, err := r.v.AuthParticipant(ctx, room.KindAgent, r.invs[0], r.tokens[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.v.Feed(ctx, p, 0, 10); err != nil {
		t.Fatal(err)
	}
	feedOnly := r.v.RoomCacheStats()
	if feedOnly.Wholes != 1 || feedOnly.Hits != 0 || feedOnly.Tails != 0 || feedOnly.Rooms != 1 {
		t.Fatalf("after one feed read: %+v", feedOnly)
	}
	parts, err := r.v.RoomParts(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	joined := parts.Shared(func(s SharedPieces) []byte { return make([]byte, 1000) })
	full := r.v.RoomCacheStats()
	if full.Hits != 1 || full.Bytes != feedOnly.Bytes+len(joined) {
		t.Fatalf("after a full read of the same version: %+v, want one hit and %d more bytes", full, len(joined))
	}
	r.comment(t, 1, "stats-0002")
	if p, err = r.v.AuthParticipant(ctx, room.KindAgent, r.invs[0], r.tokens[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := r.v.Feed(ctx, p, 0, 10); err != nil {
		t.Fatal(err)
	}
	if got := r.v.RoomCacheStats(); got.Tails != 1 || got.Wholes != 1 || got.Bytes >= full.Bytes {
		t.Fatalf("after a new event: %+v, want one tail read, and the old version's copy no longer counted (%d bytes before)", got, full.Bytes)
	}
}
