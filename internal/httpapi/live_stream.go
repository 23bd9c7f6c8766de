package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/live"
	"github.com/consensus-md/consensus/internal/parked"
	"github.com/consensus-md/consensus/internal/venue"
)

// handleStream serves the room as server-sent events: each
// stored event after Last-Event-ID (or ?after=, or 0) as "room.event" with
// id = seq, the outcome as "room.outcome" when the stream opens and
// whenever it changes, a new revision as "room.revision", and a comment
// line at least every live.KeepAlive. The stream ends when the credential
// stops holding (revocation), the client leaves or the service stops.
//
// Over HTTP/1.1 the body runs until the connection closes (no chunked
// framing), so once the first page is sent the stream leaves net/http: it
// keeps the connection and one goroutine, not the request's buffers and
// the server's goroutines, which is what lets a replica hold thousands.
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
	detached := false
	defer func() {
		if !detached {
			waiter.Leave()
		}
	}()
	st := &stream{s: s, p: p, waiter: waiter, after: after}
	// The first page is read before the status is sent: a failed read is
	// its problem (503 with Retry-After, say), not a 200 whose body ends at
	// once, which a client could not tell from a stream the server closed.
	page, events, err := st.page(requestContext(r))
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("X-Accel-Buffering", "no")
	leave := s.parking != nil && r.ProtoMajor == 1 && r.ProtoMinor >= 1
	if leave {
		h.Set("Transfer-Encoding", "identity") // net/http's word for a body the connection's close ends
	}
	holdDeadline(w, live.KeepAlive+holdSlack)
	w.WriteHeader(http.StatusOK)
	// No buffer of its own: the response's buffer gathers a batch until
	// the flush, and a stream that waits holds nothing more.
	rc := http.NewResponseController(w)
	out := &sseWriter{w: w, flush: func() error {
		holdDeadline(w, live.KeepAlive+holdSlack)
		return rc.Flush()
	}}
	st.send(out, page, events)
	if out.flush() != nil {
		return
	}
	full := events.Len() == venue.FeedMaxLimit
	if leave {
		if conn, _, end, ok := s.takeConn(w, r); ok {
			detached = true
			go st.detached(requestContext(r), conn, full, end)
			return
		}
	}
	st.run(requestContext(r), out, full)
}

// stream is one open event stream: where it stands, and what it needs to
// check its credential again without its request, which it may outlive.
type stream struct {
	s        *Server
	p        *venue.Principal
	waiter   *live.Waiter
	after    int64 // the last seq sent
	outcome  string
	revision int
}

// page reads the next page with a fresh database bound.
func (st *stream) page(ctx context.Context) (*venue.FeedPage, venue.EncodedEvents, error) {
	ctx, cancel := context.WithTimeout(ctx, st.s.dbTimeout)
	defer cancel()
	return st.s.venue.FeedEncoded(ctx, st.p, st.after, venue.FeedMaxLimit)
}

// send writes the page's events, then the revision and outcome when they
// changed.
func (st *stream) send(out *sseWriter, page *venue.FeedPage, events venue.EncodedEvents) {
	for m := range events.Marks() {
		out.event(m.Seq, events.JSON[m.Start:m.End], awaits(page.AwaitingReply, m.ID))
	}
	st.after = page.Next
	if st.revision != 0 && page.Revision != st.revision {
		out.message("", "room.revision", struct {
			Revision int `json:"revision"`
		}{page.Revision})
	}
	st.revision = page.Revision
	if page.Outcome.Status != st.outcome {
		out.message("", "room.outcome", page.Outcome)
		st.outcome = page.Outcome.Status
	}
}

// run sends what the room gains until the stream ends; full says the last
// page sent was full, so the next is read at once.
func (st *stream) run(ctx context.Context, out *sseWriter, full bool) {
	keepAlive := time.NewTicker(live.KeepAlive)
	defer keepAlive.Stop()
	for {
		for waiting := !full; waiting; {
			select {
			case <-st.waiter.Changed():
				p, err := st.s.reauthenticate(ctx, st.p)
				if err != nil {
					return
				}
				st.p = p
				waiting = false
			case <-st.s.deadlineTimer(st.p):
				waiting = false
			case <-keepAlive.C:
				out.comment("keep-alive")
				if out.flush() != nil {
					return
				}
			case <-st.waiter.Closing():
				return
			case <-ctx.Done():
				return
			}
		}
		page, events, err := st.page(ctx)
		if err != nil {
			return // a failed database or a gone client: the client resumes
		}
		st.send(out, page, events)
		if out.flush() != nil {
			return
		}
		full = events.Len() == venue.FeedMaxLimit
	}
}

// detached runs the stream on conn, taken from net/http after the first
// page: reqCtx's values without its end (net/http ends it when the handler
// returns), and the client's leaving noticed by parked.OnHangup. end tells front
// the request is over.
func (st *stream) detached(reqCtx context.Context, conn net.Conn, full bool, end func(status, written int)) {
	written := 0
	defer func() { end(0, written) }()
	defer st.waiter.Leave()
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.WithoutCancel(reqCtx))
	defer cancel()
	_ = conn.SetReadDeadline(time.Time{})
	defer parked.OnHangup(conn, cancel)()
	var buf bytes.Buffer
	out := &sseWriter{w: &buf, flush: func() error {
		_ = conn.SetWriteDeadline(time.Now().Add(live.KeepAlive + holdSlack))
		n, err := conn.Write(buf.Bytes())
		written += n
		buf.Reset()
		if buf.Cap() > maxKeptStreamBuffer {
			buf = bytes.Buffer{} // a long page's buffer is not kept while the stream waits
		}
		return err
	}}
	st.run(ctx, out, full)
}

// maxKeptStreamBuffer bounds the buffer a detached stream keeps between
// batches.
const maxKeptStreamBuffer = 8 << 10

// awaits reports whether id is among the events awaiting the reader's
// reply.
func awaits(awaiting []string, id uuid.UUID) bool {
	if len(awaiting) == 0 {
		return false
	}
	s := id.String()
	return slices.Contains(awaiting, s)
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

// sseWriter writes server-sent events into w, sent at each flush.
type sseWriter struct {
	w     io.Writer
	flush func() error
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
