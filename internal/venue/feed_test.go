package venue

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// TestFeedMatchesTheDatabase: the feed served from the room cache's
// encoded events is, byte for byte, the events the database holds after
// the start, at most the page size of them, for every start and page size,
// while the cache grows by appends and on a venue whose cache starts cold;
// Feed decodes the same events.
func TestFeedMatchesTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRoom(t, 3)
	check := func(v *Venue, head int64) {
		t.Helper()
		p, err := v.authParticipant(ctx, r.creds[1])
		if err != nil {
			t.Fatal(err)
		}
		stored, err := v.Store.EventListByAgreement(ctx, p.AgreementID)
		if err != nil {
			t.Fatal(err)
		}
		for after := int64(0); after <= head+1; after++ {
			for _, limit := range []int{1, 2, 5, FeedDefaultLimit} {
				var want []EventView
				for _, e := range stored {
					if e.Seq > after && len(want) < limit {
						want = append(want, eventView(e))
					}
				}
				page, got, err := v.FeedEncoded(ctx, p, after, limit)
				if err != nil {
					t.Fatal(err)
				}
				marks := slices.Collect(got.Marks())
				if len(marks) != got.Len() {
					t.Fatalf("after %d, limit %d: %d marks, Len %d", after, limit, len(marks), got.Len())
				}
				var joined bytes.Buffer
				for i, e := range want {
					js, err := encode(e)
					if err != nil {
						t.Fatal(err)
					}
					if i > 0 {
						joined.WriteByte(',')
					}
					joined.Write(js)
					if i >= len(marks) || marks[i].Seq != e.Seq || marks[i].ID.String() != e.ID ||
						!bytes.Equal(got.JSON[marks[i].Start:marks[i].End], js) {
						t.Fatalf("after %d, limit %d: event %d is %+v, want seq %d: %s", after, limit, i, marks, e.Seq, js)
					}
				}
				if !bytes.Equal(got.JSON, joined.Bytes()) || len(marks) != len(want) {
					t.Fatalf("after %d, limit %d: %d events %s, want %d %s", after, limit, len(marks), got.JSON, len(want), joined.Bytes())
				}
				next := after
				if n := len(want); n > 0 {
					next = want[n-1].Seq
				}
				if page.Next != next || page.ChainHead != stored[len(stored)-1].Hash {
					t.Fatalf("after %d, limit %d: next %d, chain head %s; want %d, %s", after, limit, page.Next, page.ChainHead, next, stored[len(stored)-1].Hash)
				}
				decoded, err := v.Feed(ctx, p, after, limit)
				if err != nil {
					t.Fatal(err)
				}
				if want == nil {
					want = []EventView{}
				}
				if !reflect.DeepEqual(decoded.Events, want) {
					t.Fatalf("after %d, limit %d: Feed decoded %+v, want %+v", after, limit, decoded.Events, want)
				}
			}
		}
	}
	for i := range 5 {
		r.comment(t, i, fmt.Sprintf("feed-first-%d", i))
	}
	check(r.v, 5)
	for i := range 7 {
		r.comment(t, i, fmt.Sprintf("feed-second-%d", i))
	}
	check(r.v, 12) // the cached events grew by the seven
	cold := &Venue{Store: r.v.Store, Batch: r.v.Batch, Keys: r.v.Keys, Origin: r.v.Origin, Now: r.v.Now}
	check(cold, 12)
}
