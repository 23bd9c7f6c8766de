package httpapi

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
)

// A held request over HTTP/1.1 leaves net/http while it waits: its
// handler takes the connection (Hijack) and returns, so the wait keeps one
// small goroutine and the connection, not net/http's goroutines and
// buffers and the handler's stack. The epoll set notices the client
// leaving. The answer, written as net/http would have, goes on the
// connection, which then waits for the client's next request and rejoins
// net/http through the server's listener (rejoinListener). A replica holds
// thousands of waiting clients this way (issue 30's listeners).

// detachedHold is a held request taken from net/http.
type detachedHold struct {
	s         *Server
	conn      net.Conn
	w         *connResponse
	r         *http.Request // on a context of its own (detachedContext)
	cancel    context.CancelFunc
	stopWatch func()
	end       func(status, written int)
	keepAlive bool // the client may send another request on conn
}

// detachHold takes r's connection from net/http, or returns nil when it
// cannot (no rejoining listener, HTTP/2, a method other than GET, no epoll
// set): the request then waits in its handler. On success the handler
// must return without writing to w, and the hold ends with finish.
func (s *Server) detachHold(w http.ResponseWriter, r *http.Request) *detachedHold {
	if s.rejoin == nil || r.ProtoMajor != 1 || r.ProtoMinor < 1 || r.Method != http.MethodGet || !canWatch() {
		return nil
	}
	header := w.Header().Clone() // what front and the handler set so far
	end := detachRequest(r.Context())
	// Counted before the connection leaves net/http: until then its
	// Shutdown waits for it, so WaitDetached cannot have begun.
	s.detached.Add(1)
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.detached.Done()
		end(0, 0)
		return nil
	}
	_ = conn.SetDeadline(time.Time{})
	ctx, cancel := detachedContext(r)
	d := &detachedHold{s: s, conn: conn, w: &connResponse{header: header}, r: r.WithContext(ctx), cancel: cancel, end: end,
		// A request the client sent behind this one (pipelining) is in
		// net/http's buffer, which goes: this answer closes the connection,
		// and the client sends that request again.
		keepAlive: !r.Close && brw.Reader.Buffered() == 0}
	stop, ok := watchConn(conn, func(hup bool) {
		if hup {
			cancel()
		}
		// Bytes sent while the answer is awaited: a request behind this
		// one. The watch is over; the answer closes the connection.
	})
	if !ok {
		stop = onHangup(conn, cancel)
		d.keepAlive = false // that read may take a byte of the next request
	}
	d.stopWatch = stop
	return d
}

// detachedContext is r's context without its end (net/http ends it when
// the handler returns), cancelled when the client leaves. It is also the
// unbounded context (requestContext) of the returned request, and it
// keeps its own copy of chi's route context, which chi reuses.
func detachedContext(r *http.Request) (context.Context, context.CancelFunc) {
	base, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	ctx := context.WithValue(base, unboundKey{}, base)
	if rc := chi.RouteContext(r.Context()); rc != nil {
		cp := *rc
		cp.URLParams.Keys = slices.Clone(rc.URLParams.Keys)
		cp.URLParams.Values = slices.Clone(rc.URLParams.Values)
		cp.RoutePatterns = slices.Clone(rc.RoutePatterns)
		ctx = context.WithValue(ctx, chi.RouteCtxKey, &cp)
	}
	return ctx, cancel
}

// finish ends the hold: it writes the answer on the connection and parks
// the connection for the client's next request, or closes it when the
// client left, asked to close, or the server stops.
func (d *detachedHold) finish() {
	defer d.s.detached.Done()
	defer d.cancel()
	d.stopWatch()
	status := d.w.status
	if status == 0 || status == StatusClientClosed || d.r.Context().Err() != nil {
		_ = d.conn.Close()
		d.end(StatusClientClosed, 0)
		return
	}
	keep := d.keepAlive && !d.s.rejoin.closing()
	_ = d.conn.SetWriteDeadline(time.Now().Add(holdSlack))
	_, err := d.conn.Write(d.w.encode(!keep))
	if err != nil || !keep {
		_ = d.conn.Close()
	} else {
		_ = d.conn.SetWriteDeadline(time.Time{})
		d.s.rejoin.park(d.conn)
	}
	d.end(status, d.w.body.Len())
}

// connResponse gathers a detached request's answer for finish.
type connResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (c *connResponse) Header() http.Header { return c.header }

func (c *connResponse) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
}

func (c *connResponse) Write(b []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	return c.body.Write(b)
}

// encode is the answer as HTTP/1.1 bytes, with the headers net/http would
// add or drop for its status (Content-Length, Content-Type, Date), and
// Connection: close when closing.
func (c *connResponse) encode(closing bool) []byte {
	h, body := c.header, c.body.Bytes()
	switch {
	case c.status == http.StatusNotModified:
		body = nil
		h.Del("Content-Type")
		h.Del("Content-Length")
	case c.status == http.StatusNoContent || c.status < 200:
		body = nil
		h.Del("Content-Length")
	default:
		if h.Get("Content-Length") == "" {
			h.Set("Content-Length", strconv.Itoa(len(body)))
		}
		if _, ok := h["Content-Type"]; !ok && len(body) > 0 {
			h.Set("Content-Type", http.DetectContentType(body))
		}
	}
	h.Del("Transfer-Encoding")
	if h.Get("Date") == "" {
		h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	if closing {
		h.Set("Connection", "close")
	}
	var b bytes.Buffer
	b.Grow(512 + len(body))
	b.WriteString("HTTP/1.1 ")
	b.WriteString(strconv.Itoa(c.status))
	b.WriteByte(' ')
	b.WriteString(http.StatusText(c.status))
	b.WriteString("\r\n")
	_ = h.Write(&b)
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}
