package parked

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"time"
)

// A held request over HTTP/1.1 leaves net/http while it waits: its
// handler takes the connection (Hijack), hands it to Hold and returns, so
// the wait keeps one small goroutine and the connection, not net/http's
// goroutines and buffers and the handler's stack. The epoll set notices
// the client leaving. The answer, written as net/http would have, goes on
// the connection, which then waits for the client's next request (park).
// A replica holds thousands of waiting clients this way (issue 30's
// listeners).

// answerSlack is the time an answer may take to be written once its head
// is sent.
const answerSlack = 10 * time.Second

// Held is a held request's connection, taken from net/http: its answer is
// written through Writer, and Finish or Drop ends it.
type Held struct {
	l         *Listener
	conn      net.Conn
	w         *connResponse
	stopWatch func()
}

// Hold takes conn, which a held request's handler took from net/http
// (Hijack), for the request's wait. header is what of the answer's header
// the server set so far; keepAlive whether the client may send another
// request on conn: not when it asked to close, nor when net/http had
// read bytes behind the request (pipelining), which are lost with its
// buffer: the answer then closes the connection and the client sends
// that request again. gone is called, once, if the client leaves. Call
// it only when CanWatch.
func (l *Listener) Hold(conn net.Conn, header http.Header, keepAlive bool, gone func()) *Held {
	_ = conn.SetDeadline(time.Time{})
	h := &Held{l: l, conn: conn,
		w: &connResponse{conn: conn, header: header, keep: func() bool { return keepAlive && !l.closing() }}}
	stop, ok := watchConn(conn, func(hup bool) {
		if hup {
			gone()
		}
		// Bytes sent while the answer is awaited are a request behind
		// this one. They end the watch and stay in the socket, where
		// they are read once the connection is parked.
	})
	if !ok {
		stop = OnHangup(conn, gone)
		keepAlive = false // that read may take a byte of the next request
	}
	h.stopWatch = stop
	return h
}

// Writer is the answer's ResponseWriter, to use on one goroutine. It
// sends the answer at Finish, or as it is written when it states a
// Content-Length over gatherAtMost.
func (h *Held) Writer() http.ResponseWriter { return h.w }

// Answered reports the status written so far (0 for none) and whether
// the answer's head was sent.
func (h *Held) Answered() (status int, sent bool) { return h.w.status, h.w.sent }

// Drop ends the hold without an answer: the connection closes.
func (h *Held) Drop() {
	h.stopWatch()
	_ = h.conn.Close()
}

// Finish ends the hold: it sends what of the answer is not sent yet and
// parks the connection for the client's next request, or closes it when
// the write failed, the client asked to close or the server stops. It
// returns the answer's status and the body bytes sent.
func (h *Held) Finish() (status, written int) {
	h.stopWatch()
	w := h.w
	if err := w.flush(); err != nil || w.closing {
		_ = h.conn.Close()
	} else {
		_ = h.conn.SetWriteDeadline(time.Time{})
		h.l.park(h.conn)
	}
	return w.status, w.written
}

// connResponse is a held request's ResponseWriter, on its connection.
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
		_ = c.conn.SetWriteDeadline(time.Now().Add(answerSlack))
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
