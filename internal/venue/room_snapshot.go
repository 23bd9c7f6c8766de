package venue

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// roomSnapshot is a room exactly as it was at agreement.Version. It is never
// modified once published, so requests use it without a lock.
type roomSnapshot struct {
	agreement store.Agreement
	roster    []store.RosterMember
	revision  *revisionBlock
	rule      room.History // the decision rule's view of it
	rosterJS  []byte       // the encoded roster array
	events    []byte       // the encoded events up to agreement.Head.Seq
	marks     []eventMark  // where each of them lies in events, in seq order
	notes     []room.Note  // the addressed events and replies among them
	artifact  *store.ArtifactMeta
	// early and late are the rule's outcome of this version before and at
	// or after the deadline: Evaluate reads the clock only to compare it
	// with the deadline, so every reader of the version needs one of two.
	early, late room.Outcome
	// earlyBlocking and lateBlocking are the blocking lists of those two
	// outcomes; counted holds each member's decision that counts.
	earlyBlocking, lateBlocking []BlockerView
	counted                     map[uuid.UUID]string
	// decisionRule is the rule as the room states it, with its tally.
	decisionRule RuleView

	// middle is what the HTTP layer made of the shared pieces (see
	// RoomParts.Shared), once per version.
	middleOnce    sync.Once
	middle        []byte
	middleOutcome room.Outcome // the outcome middle shows
	// charged is what of middle the snapshot's entry counts: 0 until a
	// full read made it (feed reads and streams never do). Guarded by
	// roomCache.mu.
	charged int
}

// blocking is the blocking list for outcome o, made once per version for
// the two outcomes the rule can give.
func (s *roomSnapshot) blocking(o room.Outcome) []BlockerView {
	switch o {
	case s.early:
		return s.earlyBlocking
	case s.late:
		return s.lateBlocking
	}
	return blockingView(s.rule, o, s.roster)
}

// outcome is room.Evaluate of this version at now.
func (s *roomSnapshot) outcome(now time.Time) room.Outcome {
	if now.Before(s.agreement.Deadline) {
		return s.early
	}
	return s.late
}

// snapshot returns the room at version atLeast or later: the cached
// snapshot when it is new enough, else one read from st, of which only the
// events after those cached and, while unknown, the revision and artifact
// metadata are read.
func (c *roomCache) snapshot(ctx context.Context, st *store.Store, id uuid.UUID, atLeast int64) (*roomSnapshot, error) {
	e := c.entry(id)
	if s := c.fresh(e, atLeast); s != nil {
		return s, nil
	}
	e.load.Lock()
	defer e.load.Unlock()
	if s := c.fresh(e, atLeast); s != nil {
		return s, nil
	}
	c.mu.Lock()
	if e.head == 0 {
		c.wholes++
	} else {
		c.tails++
	}
	req := store.RoomRequest{AgreementID: id, After: e.head, WithRevision: e.revision == nil, WithArtifact: e.artifact == nil}
	rev, art := e.revision, e.artifact
	c.mu.Unlock()

	rs, err := st.RoomRead(ctx, req)
	if err != nil {
		return nil, err
	}
	if rs.Revision != nil {
		if rev, err = c.keepRevision(*rs.Revision); err != nil {
			return nil, err
		}
	}
	if rev.Number != rs.Agreement.CurrentRevision {
		// A new revision was locked since it was cached: read it once.
		r, err := st.RevisionGet(ctx, id, rs.Agreement.CurrentRevision)
		if err != nil {
			return nil, err
		}
		if r.History, err = st.RevisionList(ctx, id); err != nil {
			return nil, err
		}
		if rev, err = c.keepRevision(r); err != nil {
			return nil, err
		}
	}
	if rs.Artifact != nil {
		art = rs.Artifact
	}
	added, ends, err := encodeEvents(rs.Events)
	if err != nil {
		return nil, err
	}
	rule, err := ruleOf(rs.Agreement, rev.Revision, rs.Roster)
	if err != nil {
		return nil, err
	}
	rosterJS, err := encode(rosterView(rule, rs.Roster))
	if err != nil {
		return nil, err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	grown := e.held()
	if len(added) > 0 {
		base := 0
		if len(e.events) == 0 {
			e.events = added // made for the cache, with at most an eighth to spare
		} else {
			e.events = roomFor(e.events, 1+len(added))
			e.events = append(e.events, ',')
			base = len(e.events)
			e.events = append(e.events, added...)
		}
		e.marks = roomFor(e.marks, len(rs.Events))
		for i, ev := range rs.Events {
			e.marks = append(e.marks, eventMark{seq: ev.Seq, id: ev.ID, end: base + ends[i]})
		}
	}
	for _, ev := range rs.Events {
		if n := ev.Note(); n.Matters() {
			e.notes = append(e.notes, n)
		}
	}
	e.head = rs.Agreement.Head.Seq
	e.artifact = art
	s := &roomSnapshot{agreement: rs.Agreement, roster: rs.Roster, revision: rev, rule: rule, rosterJS: rosterJS,
		events: e.events[:len(e.events):len(e.events)], marks: e.marks[:len(e.marks):len(e.marks)], notes: e.notes[:len(e.notes):len(e.notes)], artifact: art,
		early: rule.Outcome(time.Time{}), late: rule.Outcome(rs.Agreement.Deadline), counted: countedDecisions(rule), decisionRule: ruleView(rule)}
	s.earlyBlocking, s.lateBlocking = blockingView(rule, s.early, rs.Roster), blockingView(rule, s.late, rs.Roster)
	if e.snap == nil || e.snap.agreement.Version < s.agreement.Version {
		c.resize(e, e.held()-grown+s.cost()-e.snap.cost())
		e.snap = s
	}
	return s, nil
}

// held is what e's events and marks hold: their capacity, which is what
// they cost.
func (e *cachedRoom) held() int { return cap(e.events) + markSize*cap(e.marks) }

// roomFor returns s with room for n more elements. It grows s by an eighth
// beyond what it needs, where append would add a quarter or more: a room's
// events grow by a few at a time over a long life, and append's spare
// capacity was memory the cache did not count (in the bench's listener
// phase, the arrays of 200 rooms' events held 48 MB where the cache counted
// 29 MB).
func roomFor[T any](s []T, n int) []T {
	if len(s)+n <= cap(s) {
		return s
	}
	need := len(s) + n
	grown := make([]T, len(s), need+need/8)
	copy(grown, s)
	return grown
}

// cost is what a snapshot adds to its entry: its roster, and once its
// first full read made it, the copy of revision, roster and events that
// read joined (RoomParts.Shared, charged).
func (s *roomSnapshot) cost() int {
	if s == nil {
		return 0
	}
	return len(s.rosterJS) + s.charged
}

// charge counts n more bytes made for snapshot s in its entry, while s is
// the entry's snapshot; one superseded or evicted is no longer counted,
// and is kept only by the requests still using it.
func (c *roomCache) charge(s *roomSnapshot, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.rooms[s.agreement.ID]; ok && e.snap == s {
		s.charged += n
		c.resize(e, n)
	}
}
