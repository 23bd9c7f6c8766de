package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/consensus-md/consensus/internal/venue"
)

// TestStreamEventMessage: a room.event message written from the event's
// cached JSON is the event view with awaitingReply: true added when it
// awaits the reader, exactly as encoding the view with that field would
// write it.
func TestStreamEventMessage(t *testing.T) {
	inReplyTo := "0b9a7c8e-1d2f-4a3b-8c5d-6e7f8a9b0c1d"
	view := venue.EventView{ID: "4f3e2d1c-0b9a-4876-9543-210fedcba987", Seq: 7, ParticipantID: "1a2b3c4d-5e6f-4a0b-8c9d-0e1f2a3b4c5d",
		Action: "comment", Body: `Is <Friday> "fine"?`, Revision: 1, CreatedAt: "2026-12-04T15:00:00Z", InReplyTo: &inReplyTo, To: []string{"a"}}
	js, err := json.Marshal(view)
	if err != nil {
		t.Fatal(err)
	}
	js = bytes.ReplaceAll(js, []byte(`\u003c`), []byte("<")) // as the cache encodes: no HTML escaping
	js = bytes.ReplaceAll(js, []byte(`\u003e`), []byte(">"))
	for _, awaiting := range []bool{false, true} {
		var want bytes.Buffer
		want.WriteString("id: 7\nevent: room.event\ndata: ")
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(struct {
			venue.EventView
			AwaitingReply bool `json:"awaitingReply,omitempty"`
		}{view, awaiting}); err != nil {
			t.Fatal(err)
		}
		want.WriteString("\n")
		var got bytes.Buffer
		(&sseWriter{w: &got}).event(7, js, awaiting)
		if got.String() != want.String() {
			t.Fatalf("awaiting %v:\n%s\nwant\n%s", awaiting, got.String(), want.String())
		}
	}
}

// TestFeedPageFromCachedEvents: the feed page written around the cached
// events is the page writeJSON writes with those events decoded.
func TestFeedPageFromCachedEvents(t *testing.T) {
	views := []venue.EventView{
		{ID: "4f3e2d1c-0b9a-4876-9543-210fedcba987", Seq: 3, Action: "comment", Body: "one <b>", Revision: 1},
		{ID: "5f3e2d1c-0b9a-4876-9543-210fedcba987", Seq: 4, Action: "agree", Revision: 1, To: []string{"x"}},
	}
	var joined bytes.Buffer
	for i, v := range views {
		if i > 0 {
			joined.WriteByte(',')
		}
		enc := json.NewEncoder(&joined)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		joined.Truncate(joined.Len() - 1)
	}
	for _, events := range [][]venue.EventView{views, {}} {
		page := venue.FeedPage{Next: 4, ChainHead: "abc", Outcome: venue.OutcomeView{Status: "pending"}, AwaitingReply: []string{"q"}}
		cached := venue.EncodedEvents{}
		if len(events) > 0 {
			cached.JSON = joined.Bytes()
		}
		want := httptest.NewRecorder()
		page.Events = events
		writeJSON(want, http.StatusOK, &page)
		got := httptest.NewRecorder()
		writeFeedPage(got, httptest.NewRequest(http.MethodGet, "/", nil), &page, cached)
		if got.Body.String() != want.Body.String() || got.Code != want.Code || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") ||
			got.Header().Get("Content-Length") != strconv.Itoa(want.Body.Len()) {
			t.Fatalf("%d %v %s\nwant %d %v %s", got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
		}
	}
}
