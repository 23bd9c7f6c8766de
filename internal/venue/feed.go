package venue

import (
	"context"

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
// order, as of p's version or later. It reads the agreement's state from the
// room cache and, when events lie beyond after, one page of them.
func (v *Venue) Feed(ctx context.Context, p *Principal, after int64, limit int) (*FeedPage, error) {
	r, err := v.readRoom(ctx, p)
	if err != nil {
		return nil, err
	}
	a := r.snap.agreement
	page := &FeedPage{Events: []EventView{}, Next: after, ChainHead: a.Head.Hash, Outcome: r.outcome, AwaitingReply: r.you.AwaitingReply, Tag: r.tag,
		Revision: a.CurrentRevision, Final: r.outcome.Status != room.StatusPending}
	if after >= a.Head.Seq || limit <= 0 {
		return page, nil
	}
	events, err := v.Store.EventPage(ctx, a.ID, after, a.Head.Seq, min(limit, FeedMaxLimit))
	if err != nil {
		return nil, err
	}
	for _, e := range events {
		page.Events = append(page.Events, eventView(e))
	}
	if n := len(events); n > 0 {
		page.Next = events[n-1].Seq
	}
	return page, nil
}
