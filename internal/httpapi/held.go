package httpapi

import (
	"bufio"
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
	conn, brw, end, ok := s.takeConn(w, r)
	if !ok {
		return nil
	}
	_ = conn.SetDeadline(time.Time{})
	ctx, cancel := detachedContext(r)
	// Whether the client may send another request on conn. A request it
	// sent behind this one (pipelining) is in net/http's buffer, which
	// goes: this answer closes the connection, and the client sends that
	// request again.
	keepAlive := !r.Close && brw.Reader.Buffered() == 0
	d := &detachedHold{s: s, conn: conn, r: r.WithContext(ctx), cancel: cancel, end: end,
		w: &connResponse{conn: conn, header: header, keep: func() bool { return keepAlive && !s.rejoin.closing() }}}
	stop, ok := watchConn(conn, func(hup bool) {
		if hup {
			cancel()
		}
		// Bytes sent while the answer is awaited are a request behind
		// this one. They end the watch and stay in the socket, where
		// net/http reads them once the connection rejoins it.
	})
	if !ok {
		stop = onHangup(conn, cancel)
		keepAlive = false // that read may take a byte of the next request
	}
	d.stopWatch = stop
	return d
}

// takeConn takes r's connection from net/http (Hijack) for work that
// outlives the handler: the request stays in flight and logged until end,
// and WaitDetached waits for it. Call end once that work is over (detached
// counts it done); when ok is false nothing was taken and the handler
// answers through w as usual.
func (s *Server) takeConn(w http.ResponseWriter, r *http.Request) (conn net.Conn, brw *bufio.ReadWriter, end func(status, written int), ok bool) {
	ended := detachRequest(r.Context())
	// Counted before the connection leaves net/http: until then its
	// Shutdown waits for it, so WaitDetached cannot have begun.
	s.detached.Add(1)
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.detached.Done()
		ended(0, 0)
		return nil, nil, nil, false
	}
	return conn, brw, func(status, written int) {
		ended(status, written)
		s.detached.Done()
	}, true
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

// finish ends the hold: it sends what of the answer is not sent yet and
// parks the connection for the client's next request, or closes it when
// the client left, asked to close, or the server stops.
func (d *detachedHold) finish() {
	defer d.cancel()
	d.stopWatch()
	w := d.w
	if w.status == 0 || w.status == StatusClientClosed || (!w.sent && d.r.Context().Err() != nil) {
		_ = d.conn.Close()
		d.end(StatusClientClosed, 0)
		return
	}
	if err := w.flush(); err != nil || w.closing {
		_ = d.conn.Close()
	} else {
		_ = d.conn.SetWriteDeadline(time.Time{})
		d.s.rejoin.park(d.conn)
	}
	d.end(w.status, w.written)
}

// connResponse is a detached request's ResponseWriter, on its connection.
// An answer that states a Content-Length over gatherAtMost goes out as it
// is written (the head with the first bytes, in one write), as net/http
// sends it: a room of thousands of events is not copied for each woken
// reader. Any other answer (a feed page, a problem, a 304) is gathered,
// and flush sends it whole, in one write.
type connResponse struct {
	conn   net.Conn
	keep   func() bool // whether the connection may carry another request, asked when the head goes
	header http.Header
	status int

	body    bytes.Buffer // gathered until the head is sent
	sent    bool         // the head is sent
	closing bool         // the head said Connection: close
	written int          // body bytes sent
	err     error        // the first failed write
}

func (c *connResponse) Header() http.Header { return c.header }

func (c *connResponse) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
}

func (c *connResponse) Write(b []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	switch {
	case c.err != nil:
		return 0, c.err
	case c.sent:
		return c.send(nil, b)
	case bodyAllowed(c.status) && c.declared() > gatherAtMost:
		return c.send(c.head(), b)
	default:
		return c.body.Write(b)
	}
}

// gatherAtMost is the largest body gathered to go out with its head in one
// write; a larger one is sent as it is written, not copied.
const gatherAtMost = 32 << 10

// declared is the answer's Content-Length, or -1 when it states none.
func (c *connResponse) declared() int {
	n, err := strconv.Atoi(c.header.Get("Content-Length"))
	if err != nil {
		return -1
	}
	return n
}

// flush sends the head, if it is not sent, with the gathered body.
func (c *connResponse) flush() error {
	if !c.sent && c.err == nil {
		_, _ = c.send(c.head(), c.body.Bytes())
	}
	return c.err
}

// send writes head (nil once sent) and b in one write.
func (c *connResponse) send(head, b []byte) (int, error) {
	if head != nil {
		c.sent = true
		_ = c.conn.SetWriteDeadline(time.Now().Add(holdSlack))
	}
	bufs := make(net.Buffers, 0, 2)
	for _, p := range [][]byte{head, b} {
		if len(p) > 0 {
			bufs = append(bufs, p)
		}
	}
	n, err := bufs.WriteTo(c.conn)
	sent := max(0, int(n)-len(head))
	c.written += sent
	if err != nil {
		c.err = err
	}
	return sent, err
}

// bodyAllowed reports whether an answer of status may have a body.
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// head is the answer's status line and headers, with what net/http would
// add or drop for its status (Content-Length, Content-Type, Date), and
// Connection: close unless keep allows another request.
func (c *connResponse) head() []byte {
	h, body := c.header, c.body.Bytes()
	switch {
	case c.status == http.StatusNotModified:
		h.Del("Content-Type")
		h.Del("Content-Length")
		c.body.Reset()
	case !bodyAllowed(c.status):
		h.Del("Content-Length")
		c.body.Reset()
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
	c.closing = !c.keep()
	if c.closing {
		h.Set("Connection", "close")
	}
	var b bytes.Buffer
	b.Grow(512)
	b.WriteString("HTTP/1.1 ")
	b.WriteString(strconv.Itoa(c.status))
	b.WriteByte(' ')
	b.WriteString(http.StatusText(c.status))
	b.WriteString("\r\n")
	_ = h.Write(&b)
	b.WriteString("\r\n")
	return b.Bytes()
}
