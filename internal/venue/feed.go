package venue

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sort"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/room"
)

// Feed page sizes.
const (
	FeedDefaultLimit = 100
	FeedMaxLimit     = 500
)

// FeedPage is one page of the event feed: the events after a seq, with the
// chain head and outcome of the same agreement state, so a reader can tell
// a gap (prev of the first event is not the hash it holds) or a rewrite.
type FeedPage struct {
	Events []EventView `json:"events"`
	// Next is the seq of the last event returned, or the given after.
	Next      int64       `json:"next"`
	ChainHead string      `json:"chainHead"`
	Outcome   OutcomeView `json:"outcome"`
	// AwaitingReply is the reader's you.awaitingReply in the room at the
	// state the page reports.
	AwaitingReply []string `json:"awaitingReply"`

	// Tag is the room's tag for this reader at the state the page reports:
	// a held request waits until the reader's tag differs (see RoomTag).
	Tag RoomTag `json:"-"`
	// Revision is the current revision number at that state.
	Revision int `json:"-"`
	// Final reports an outcome that no later change can alter.
	Final bool `json:"-"`
}

// Feed returns at most limit of p's agreement's events with seq > after, in
// order, as of p's version or later: FeedEncoded's page, with its events
// decoded into page.Events.
func (v *Venue) Feed(ctx context.Context, p *Principal, after int64, limit int) (*FeedPage, error) {
	page, events, err := v.FeedEncoded(ctx, p, after, limit)
	if err != nil {
		return nil, err
	}
	if events.Len() == 0 {
		return page, nil
	}
	list := make([]byte, 0, len(events.JSON)+2)
	list = append(append(append(list, '['), events.JSON...), ']')
	if err := json.Unmarshal(list, &page.Events); err != nil {
		return nil, fmt.Errorf("venue: feed: the room cache's events: %w", err)
	}
	return page, nil
}

// EncodedEvents are events of a page as the room cache holds them, encoded
// once per room for every reader: JSON is the events' JSON (each an
// EventView) joined by commas, and Marks say where each one lies. Callers
// must not modify JSON. The marks are read from the room cache's own, so a
// page costs no copy of them (a reconnecting crowd reads pages of 500).
type EncodedEvents struct {
	JSON  []byte
	marks []eventMark // the cache's, one per event of JSON
	base  int         // where JSON starts in the cached events the marks index
}

// EventMark is one event of EncodedEvents: its seq and id, and its JSON
// at JSON[Start:End].
type EventMark struct {
	Seq        int64
	ID         uuid.UUID
	Start, End int
}

// Len is the number of events.
func (e EncodedEvents) Len() int { return len(e.marks) }

// Marks yields where each event lies in JSON, in order.
func (e EncodedEvents) Marks() iter.Seq[EventMark] {
	return func(yield func(EventMark) bool) {
		start := 0
		for _, m := range e.marks {
			end := m.end - e.base
			if !yield(EventMark{Seq: m.seq, ID: m.id, Start: start, End: end}) {
				return
			}
			start = end + 1 // past the comma
		}
	}
}

// FeedEncoded is Feed with the events left encoded: page.Events is empty
// and the events are in the returned EncodedEvents. The events come from
// the room snapshot of p's version or later, which a woken reader shares
// with every other reader of the room: a change costs one read of the room,
// not one per reader.
func (v *Venue) FeedEncoded(ctx context.Context, p *Principal, after int64, limit int) (*FeedPage, EncodedEvents, error) {
	r, err := v.readRoom(ctx, p)
	if err != nil {
		return nil, EncodedEvents{}, err
	}
	a := r.snap.agreement
	page := &FeedPage{Events: []EventView{}, Next: after, ChainHead: a.Head.Hash, Outcome: r.outcome, AwaitingReply: r.you.AwaitingReply, Tag: r.tag,
		Revision: a.CurrentRevision, Final: r.outcome.Status != room.StatusPending}
	if after >= a.Head.Seq || limit <= 0 {
		return page, EncodedEvents{}, nil
	}
	marks := r.snap.marks
	if n := len(marks); n == 0 || marks[n-1].seq != a.Head.Seq {
		// The snapshot always holds every event up to its head; this
		// guards the invariant rather than serve a short page.
		return nil, EncodedEvents{}, fmt.Errorf("venue: feed: the room snapshot lacks events up to seq %d", a.Head.Seq)
	}
	first := sort.Search(len(marks), func(i int) bool { return marks[i].seq > after })
	last := min(len(marks), first+min(limit, FeedMaxLimit))
	start := 0
	if first > 0 {
		start = marks[first-1].end + 1 // past the comma
	}
	end := marks[last-1].end
	out := EncodedEvents{JSON: r.snap.events[start:end:end], marks: marks[first:last:last], base: start}
	page.Next = marks[last-1].seq
	return page, out, nil
}

// RefreshRoom reads agreement id's room into the room cache when the cache
// holds a version of it, so that the readers a change wakes find the new
// version there instead of each waiting for the read. It decides nothing:
// every reader still asks for the version its own credential check
// returned, and reads it itself when the cache lacks it.
func (v *Venue) RefreshRoom(ctx context.Context, id uuid.UUID) error {
	c := v.rooms()
	c.mu.Lock()
	e, ok := c.rooms[id]
	var held int64 = -1
	if ok && e.snap != nil {
		held = e.snap.agreement.Version
	}
	c.mu.Unlock()
	if held < 0 {
		return nil // nobody read it lately: nobody waits on it here
	}
	_, err := c.snapshot(ctx, v.Store, id, held+1)
	return err
}
