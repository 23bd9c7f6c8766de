package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/live"
	"github.com/consensus-md/consensus/internal/venue"
)

// handleStream serves the room as server-sent events: each
// stored event after Last-Event-ID (or ?after=, or 0) as "room.event" with
// id = seq, the outcome as "room.outcome" when the stream opens and
// whenever it changes, a new revision as "room.revision", and a comment
// line at least every live.KeepAlive. The stream ends when the credential
// stops holding (revocation), the client leaves or the service stops.
func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	after, err := streamStart(r)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	p := participantFrom(r.Context())
	waiter := s.join(w, r, p)
	if waiter == nil {
		return
	}
	defer waiter.Leave()
	// The first page is read before the status is sent: a failed read is
	// its problem (503 with Retry-After, say), not a 200 whose body ends at
	// once, which a client could not tell from a stream the server closed.
	page, events, err := s.streamPage(r, p, after)
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("X-Accel-Buffering", "no")
	holdDeadline(w, live.KeepAlive+holdSlack)
	w.WriteHeader(http.StatusOK)
	// No buffer of its own: the response's buffer gathers a batch until
	// the flush, and a stream that waits holds nothing more.
	out := &sseWriter{w: w, rc: http.NewResponseController(w)}
	ctx := requestContext(r)
	keepAlive := time.NewTicker(live.KeepAlive)
	defer keepAlive.Stop()
	var outcome string
	revision := 0
	for ; ; page, events, err = s.streamPage(r, p, after) {
		if err != nil {
			return // a failed database or a gone client: the client resumes
		}
		for _, m := range events.Marks {
			out.event(m.Seq, events.JSON[m.Start:m.End], awaits(page.AwaitingReply, m.ID))
		}
		after = page.Next
		if revision != 0 && page.Revision != revision {
			out.message("", "room.revision", struct {
				Revision int `json:"revision"`
			}{page.Revision})
		}
		revision = page.Revision
		if page.Outcome.Status != outcome {
			out.message("", "room.outcome", page.Outcome)
			outcome = page.Outcome.Status
		}
		if out.flush(w) != nil {
			return
		}
		if len(events.Marks) == venue.FeedMaxLimit {
			continue // more to send before waiting
		}
		for waiting := true; waiting; {
			select {
			case <-waiter.Changed():
				if p, err = s.reauthenticate(r); err != nil {
					return
				}
				waiting = false
			case <-s.deadlineTimer(p):
				waiting = false
			case <-keepAlive.C:
				out.comment("keep-alive")
				if out.flush(w) != nil {
					return
				}
			case <-waiter.Closing():
				return
			case <-ctx.Done():
				return
			}
		}
	}
}

// awaits reports whether id is among the events awaiting the reader's
// reply.
func awaits(awaiting []string, id uuid.UUID) bool {
	if len(awaiting) == 0 {
		return false
	}
	s := id.String()
	return slices.Contains(awaiting, s)
}

// streamPage reads the next page with a fresh database bound.
func (s *Server) streamPage(r *http.Request, p *venue.Principal, after int64) (*venue.FeedPage, venue.EncodedEvents, error) {
	ctx, cancel := s.freshDatabase(r)
	defer cancel()
	return s.venue.FeedEncoded(ctx, p, after, venue.FeedMaxLimit)
}

// streamStart is where a stream resumes: Last-Event-ID (the seq of the
// last event the client received), else ?after=, else 0.
func streamStart(r *http.Request) (int64, error) {
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return 0, invalidField("Last-Event-ID", "must be the seq of the last event received: a non-negative integer")
		}
		return n, nil
	}
	after, _, err := feedQuery(r)
	return after, err
}

// sseWriter writes server-sent events into the response's buffer, sent
// at each flush.
type sseWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

// event writes one room.event message: the event's JSON as the room cache
// encoded it (an EventView), marked awaitingReply when it asks the reader
// and the reader had not answered it when it was sent, with id = seq.
func (o *sseWriter) event(seq int64, js []byte, awaitingReply bool) {
	var head [64]byte
	b := append(head[:0], "id: "...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, "\nevent: room.event\ndata: "...)
	_, _ = o.w.Write(b)
	if awaitingReply && len(js) > 0 && js[len(js)-1] == '}' {
		_, _ = o.w.Write(js[:len(js)-1])
		_, _ = io.WriteString(o.w, `,"awaitingReply":true}`)
	} else {
		_, _ = o.w.Write(js)
	}
	_, _ = io.WriteString(o.w, "\n\n")
}

// message writes one event; an empty id leaves the client's last event id
// as it was (outcome and revision messages are not positions in the feed).
func (o *sseWriter) message(id, event string, v any) {
	var data bytes.Buffer
	enc := json.NewEncoder(&data)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return
	}
	if id != "" {
		_, _ = io.WriteString(o.w, "id: "+id+"\n")
	}
	_, _ = io.WriteString(o.w, "event: "+event+"\ndata: ")
	_, _ = o.w.Write(bytes.TrimSuffix(data.Bytes(), []byte("\n")))
	_, _ = io.WriteString(o.w, "\n\n")
}

func (o *sseWriter) comment(text string) { _, _ = io.WriteString(o.w, ": "+text+"\n\n") }

// flush sends what is buffered, extending the write deadline first.
func (o *sseWriter) flush(w http.ResponseWriter) error {
	holdDeadline(w, live.KeepAlive+holdSlack)
	return o.rc.Flush()
}
