package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/consensus-md/consensus/internal/venue"
)

// handleEvents serves the feed: the events after ?after=, at
// most ?limit=. With Prefer: wait=N an empty page of a room still pending
// is held until the room changes for this reader; the page
// then answers with what changed, or stays empty when the wait ends.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	after, limit, err := feedQuery(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	wait := preferWait(w, r)
	page, events, err := s.venue.FeedEncoded(r.Context(), participantFrom(r.Context()), after, limit)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	if wait > 0 && events.Len() == 0 && !page.Final {
		s.hold(w, r, wait, page.Tag, func(w http.ResponseWriter, r *http.Request, p *venue.Principal, changed bool) {
			if changed {
				ctx, cancel := s.freshDatabase(r)
				defer cancel()
				if page, events, err = s.venue.FeedEncoded(ctx, p, after, limit); err != nil {
					s.writeProblem(w, r, err)
					return
				}
			}
			writeFeedPage(w, r, page, events)
		})
		return
	}
	writeFeedPage(w, r, page, events)
}

// writeFeedPage answers 200 with page and its events as the room cache
// encoded them: the bytes writeJSON would write for the page with those
// events in page.Events, without encoding them again for every reader.
func writeFeedPage(w http.ResponseWriter, r *http.Request, page *venue.FeedPage, events venue.EncodedEvents) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	page.Events = []venue.EventView{}
	if err := enc.Encode(page); err != nil {
		http.Error(w, "encoding failed", http.StatusInternalServerError)
		return
	}
	head := []byte(`{"events":[`)
	rest, ok := bytes.CutPrefix(buf.Bytes(), head)
	if !ok {
		http.Error(w, "encoding failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()+len(events.JSON)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(head)
	_, _ = w.Write(events.JSON)
	_, _ = w.Write(rest)
}

// feedQuery reads ?after= (a seq, default 0) and ?limit= (1 to
// venue.FeedMaxLimit, default venue.FeedDefaultLimit).
func feedQuery(r *http.Request) (after int64, limit int, err error) {
	q := r.URL.Query()
	after, limit = 0, venue.FeedDefaultLimit
	if v, ok := q["after"]; ok {
		n, perr := strconv.ParseInt(lastOf(v), 10, 64)
		if perr != nil || n < 0 || len(v) != 1 {
			return 0, 0, invalidField("after", "must be one non-negative integer: the seq of the last event you hold (0 for none)")
		}
		after = n
	}
	if v, ok := q["limit"]; ok {
		n, perr := strconv.Atoi(lastOf(v))
		if perr != nil || n < 1 || n > venue.FeedMaxLimit || len(v) != 1 {
			return 0, 0, invalidField("limit", "must be one integer from 1 to "+strconv.Itoa(venue.FeedMaxLimit))
		}
		limit = n
	}
	return after, limit, nil
}

func lastOf(v []string) string { return v[len(v)-1] }
