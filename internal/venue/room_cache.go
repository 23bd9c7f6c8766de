package venue

import (
	"container/list"
	"context"
	"sync"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// DefaultRoomCacheBytes bounds the memory of the room cache when
// Venue.RoomCacheBytes is zero; consensusd sets it from
// CONSENSUS_ROOM_CACHE_MB, whose default is the same 48 MiB. The 4,000
// listeners of make bench wake 200 rooms of about 250 events in turn:
// their encoded events and marks, some 150 KB a room, need about 29 MiB,
// and at 16 MiB every wake-up read its room whole (2,311 whole reads and
// 2,304 evictions in one listener phase) as the least recently read room
// was always the next one woken.
const DefaultRoomCacheBytes = 48 << 20

// roomCache keeps, per agreement, what full room reads are made of: the
// encoded current revision (immutable), the encoded events (an event never
// changes once stored, so the list only grows), the artifact (immutable)
// and the latest snapshot read (version, outcome, roster).
//
// It never decides what is current. Every request reads the agreement's
// version, with its credential, from the database; the cache answers only
// with a snapshot at least that new and otherwise reads what it lacks in one
// round trip. So no replica serves a stale room, outcome or revocation.
type roomCache struct {
	limit int

	mu    sync.Mutex
	rooms map[uuid.UUID]*cachedRoom
	lru   list.List // *cachedRoom, most recently used first
	bytes int
	// agreements maps invitations to their agreements (a fixed fact), so an
	// append, which knows only its invitation before its transaction, finds
	// the cached revision.
	agreements map[uuid.UUID]uuid.UUID
	// The cache's history, for metrics: snapshots served as cached (hits),
	// read from the database after the events cached (tails) or from the
	// room's first event (wholes), and entries evicted to fit the limit.
	hits, tails, wholes, evictions int64
}

// RoomCacheStats is the room cache's state and history.
type RoomCacheStats struct {
	Bytes, Limit, Rooms int
	// Hits are room reads the cache answered; Tails read only the events
	// after those it held, Wholes the whole room; Evictions are rooms
	// dropped to stay within Limit.
	Hits, Tails, Wholes, Evictions int64
}

// RoomCacheStats reads the room cache's statistics.
func (v *Venue) RoomCacheStats() RoomCacheStats {
	c := v.rooms()
	c.mu.Lock()
	defer c.mu.Unlock()
	return RoomCacheStats{Bytes: c.bytes, Limit: c.limit, Rooms: len(c.rooms), Hits: c.hits, Tails: c.tails, Wholes: c.wholes, Evictions: c.evictions}
}

// maxInvitations bounds the invitation → agreement map (about 80 bytes an
// entry); past it the map starts again empty.
const maxInvitations = 100_000

// agreementOf returns the agreement of an invitation seen before.
func (c *roomCache) agreementOf(invitationID uuid.UUID) (uuid.UUID, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.agreements[invitationID]
	return id, ok
}

// learnAgreement records the agreement of an invitation; a nil agreement
// is ignored.
func (c *roomCache) learnAgreement(invitationID, agreementID uuid.UUID) {
	if agreementID == uuid.Nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.agreements[invitationID]; ok {
		return
	}
	if len(c.agreements) >= maxInvitations {
		c.agreements = map[uuid.UUID]uuid.UUID{}
	}
	c.agreements[invitationID] = agreementID
}

// cachedRoom is one agreement's entry. Fields other than load are guarded
// by roomCache.mu; events and head change only under load.
type cachedRoom struct {
	id   uuid.UUID
	elem *list.Element
	// load lets one request at a time read what the entry lacks; the
	// others wait and then find it.
	load     sync.Mutex
	revision *revisionBlock
	events   []byte      // encoded events joined by commas; append-only
	marks    []eventMark // each encoded event's seq, id and end; append-only
	notes    []room.Note // the events with to or inReplyTo; append-only
	head     int64       // seq of the last encoded event
	snap     *roomSnapshot
	artifact *store.ArtifactMeta
	body     *Artifact // CONSENSUS.md once read
	size     int
}

// eventMark locates one encoded event in the joined events: it ends at
// end, and starts at 0 or one byte (the comma) after the previous end.
type eventMark struct {
	seq int64
	id  uuid.UUID
	end int
}

// markSize is what one eventMark costs the cache.
const markSize = 40

// revisionBlock is a locked revision, with the history of revisions up to
// it, and their encoded room views.
type revisionBlock struct {
	store.Revision
	view    []byte   // the encoded RevisionView
	history []byte   // the encoded revisions list
	members []string // the participant ids of its roster
}

func newRoomCache(limit int) *roomCache {
	if limit <= 0 {
		limit = DefaultRoomCacheBytes
	}
	return &roomCache{limit: limit, rooms: map[uuid.UUID]*cachedRoom{}, agreements: map[uuid.UUID]uuid.UUID{}}
}

// entry returns the agreement's entry, made most recently used.
func (c *roomCache) entry(id uuid.UUID) *cachedRoom {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.rooms[id]
	if !ok {
		e = &cachedRoom{id: id}
		e.elem = c.lru.PushFront(e)
		c.rooms[id] = e
		return e
	}
	c.lru.MoveToFront(e.elem)
	return e
}

// fresh returns e's snapshot if it is at least version atLeast.
func (c *roomCache) fresh(e *cachedRoom, atLeast int64) *roomSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.snap != nil && e.snap.agreement.Version >= atLeast {
		c.hits++
		return e.snap
	}
	return nil
}

// revision returns the agreement's cached revision, or nil.
func (c *roomCache) revision(id uuid.UUID) *revisionBlock {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.rooms[id]; ok {
		return e.revision
	}
	return nil
}

// keepRevision caches rev as its agreement's current revision (a later
// number replaces an earlier one) and returns its block.
func (c *roomCache) keepRevision(rev store.Revision) (*revisionBlock, error) {
	b, err := newRevisionBlock(rev)
	if err != nil {
		return nil, err
	}
	return c.keepBlock(b), nil
}

// keepBlock is keepRevision for a block already built.
func (c *roomCache) keepBlock(b *revisionBlock) *revisionBlock {
	e := c.entry(b.AgreementID)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.revision == nil || e.revision.Number < b.Number {
		c.resize(e, sizeOf(b)-sizeOf(e.revision))
		e.revision = b
	}
	return e.revision
}

func sizeOf(b *revisionBlock) int {
	if b == nil {
		return 0
	}
	return len(b.view) + len(b.history)
}

// revisionReader is what lockedRevision reads through: the store, or a
// transaction.
type revisionReader interface {
	RevisionGet(ctx context.Context, agreementID uuid.UUID, number int) (store.Revision, error)
	RevisionList(ctx context.Context, agreementID uuid.UUID) ([]store.RevisionSummary, error)
}

// lockedRevision returns revision number of an agreement from the cache,
// reading and caching it once: a locked revision never changes.
func (c *roomCache) lockedRevision(ctx context.Context, r revisionReader, agreementID uuid.UUID, number int) (store.Revision, error) {
	if b := c.revision(agreementID); b != nil && b.Number == number {
		return b.Revision, nil
	}
	rev, err := r.RevisionGet(ctx, agreementID, number)
	if err != nil {
		return store.Revision{}, err
	}
	if rev.History, err = r.RevisionList(ctx, agreementID); err != nil {
		return store.Revision{}, err
	}
	if _, err := c.keepRevision(rev); err != nil {
		return store.Revision{}, err
	}
	return rev, nil
}

// artifact returns the agreement's cached CONSENSUS.md, or nil.
func (c *roomCache) artifact(id uuid.UUID) *Artifact {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.rooms[id]; ok {
		return e.body
	}
	return nil
}

// keepArtifact caches an agreement's CONSENSUS.md: stored once, never
// changed. Callers must not modify a.
func (c *roomCache) keepArtifact(id uuid.UUID, a *Artifact) {
	e := c.entry(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.body == nil {
		e.body = a
		c.resize(e, len(a.Body))
	}
}

// resize accounts for delta more bytes in e and evicts the least recently
// used entries, e last, until the cache fits its limit again. A room larger
// than the whole limit is thus not kept at all: its reads cost what they
// return, as without a cache. Callers hold c.mu.
func (c *roomCache) resize(e *cachedRoom, delta int) {
	e.size += delta
	if c.rooms[e.id] != e {
		return // evicted while a request used it: no longer counted
	}
	c.bytes += delta
	for c.bytes > c.limit && c.lru.Len() > 0 {
		victim := c.lru.Back().Value.(*cachedRoom)
		c.lru.Remove(victim.elem)
		delete(c.rooms, victim.id)
		c.bytes -= victim.size
		c.evictions++
		if victim == e {
			return
		}
	}
}
