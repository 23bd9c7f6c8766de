package parked

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"
)

// A long-polling client sends its next held request on the connection its
// last answer came on, which waits parked (Listener). Handed back to
// net/http, that connection gets a new goroutine, new buffers (net/http's
// pools never see again those a hijack took) and a new request state, only
// for the request to leave net/http at once to wait. In make bench's waves
// of wake-ups that churn was a fifth of the service's allocation (issue
// 30), and the collector's share of the CPU grows with it.
//
// So a parked connection's next request is read here when it is plainly a
// held read: a GET over HTTP/1.1, with no body, on a path Options.Route
// serves, whose head fits one buffer. It is served by that handler, on a
// connResponse, under the server's context (ConnContext), and waits as any
// held request does (its handler takes the connection through
// reheldResponse.Hijack). Anything else goes to net/http untouched: the
// bytes read so far go with the connection (prefixConn), so net/http
// reads the request whole and answers it as it would have, a malformed
// one included. FuzzParkedRequest holds this reader to net/http's.

// reholdHead bounds a request head read here; a longer one is net/http's.
const reholdHead = 4 << 10

// reholdBuffers is what reading one request takes, kept across requests.
type reholdBuffers struct {
	conn  *bufio.Reader // on the connection
	head  bytes.Reader  // the head, for parse
	parse *bufio.Reader // on head
}

var reholdPool = sync.Pool{New: func() any {
	return &reholdBuffers{conn: bufio.NewReaderSize(nil, reholdHead), parse: bufio.NewReaderSize(nil, reholdHead)}
}}

func (b *reholdBuffers) release() {
	b.conn.Reset(nil)
	b.head.Reset(nil)
	b.parse.Reset(nil)
	reholdPool.Put(b)
}

// serveParked serves conn's next request, which its client began to send
// while it was parked, or hands conn to net/http. Call it on a goroutine
// of its own, counted in l.serving.
func (l *Listener) serveParked(conn net.Conn) {
	bufs := reholdPool.Get().(*reholdBuffers)
	bufs.conn.Reset(conn)
	handed := false
	defer func() {
		if !handed {
			bufs.release()
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(l.headWait))
	req, handler, back := readParked(conn, bufs, l.route)
	switch {
	case req == nil && back == nil:
		_ = conn.Close()
		return
	case req == nil:
		_ = back.SetReadDeadline(time.Time{})
		l.rejoin(back)
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	// The context net/http would give the request: the server's (its
	// BaseContext), through ConnContext, with the local address, ended
	// when the handler returns.
	base := context.Background()
	if p := l.base.Load(); p != nil {
		base = *p
	}
	ctx, cancel := context.WithCancel(context.WithValue(withGather(base, conn), http.LocalAddrContextKey, conn.LocalAddr()))
	defer cancel()
	req.RemoteAddr = conn.RemoteAddr().String()
	req = req.WithContext(ctx)

	w := &reheldResponse{connResponse: connResponse{conn: conn, header: http.Header{}}, reader: bufs.conn}
	w.keep = func() bool { return !req.Close && !l.closing() }
	ok := l.serveReheld(handler, w, req)
	if w.hijacked {
		handed = w.handed
		return // the held request has the connection
	}
	w.WriteHeader(http.StatusOK) // a handler that wrote nothing answered 200, as in net/http
	switch {
	case !ok || w.flush() != nil || w.closing:
		_ = conn.Close()
	case bufs.conn.Buffered() > 0: // a request sent behind this one: net/http's
		l.rejoin(newPrefixConn(conn, bufs.conn))
	default:
		_ = conn.SetWriteDeadline(time.Time{})
		l.park(conn)
	}
}

// serveReheld runs handler as net/http would, and reports false when it
// panicked (the connection is then closed, as net/http closes it).
func (l *Listener) serveReheld(handler http.Handler, w http.ResponseWriter, r *http.Request) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			ok = false
			if p != http.ErrAbortHandler && l.log != nil {
				l.log.Error("panic serving a request", slog.String("panic", fmt.Sprint(p)))
			}
		}
	}()
	handler.ServeHTTP(w, r)
	return true
}

// errNotHere is a request head this file leaves to net/http: longer than
// reholdHead, or starting with an empty line.
var errNotHere = errors.New("parked: request head left to net/http")

// readHead reads from br until it holds a whole request head, which it
// returns (up to and with the empty line that ends it) without consuming
// it. The head is valid until br is next read.
func readHead(br *bufio.Reader) ([]byte, error) {
	for {
		buf, _ := br.Peek(br.Buffered())
		if n := headEnd(buf); n != 0 {
			if n < 0 {
				return nil, errNotHere
			}
			return buf[:n], nil
		}
		if len(buf) == br.Size() {
			return nil, errNotHere
		}
		// Reads what the connection has, at least one byte.
		if _, err := br.Peek(len(buf) + 1); err != nil {
			return nil, err
		}
	}
}

// headEnd is the length of the request head at the start of b, 0 when b
// holds no whole head, or -1 when b starts with an empty line. Lines may
// end in CRLF or, as net/http accepts, in LF alone.
func headEnd(b []byte) int {
	if len(b) > 0 && (b[0] == '\r' || b[0] == '\n') {
		return -1
	}
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return 0
		}
		line := b[i : i+j]
		i += j + 1
		if len(line) == 0 || (len(line) == 1 && line[0] == '\r') {
			return i
		}
	}
}

// readParked reads conn's next request through bufs.conn, which reads
// conn. It returns the request and the handler route gives for its path
// when it is a held read served here (reheldRequest), its head consumed;
// or back, conn with every byte read from it ahead of the rest, when
// net/http is to read it, which then reads what it would have read had it
// never left (FuzzParkedRequest); or neither when conn is to be closed:
// its client closed it without sending anything, or did not send a whole
// head in time (net/http closes such a connection too, answering nothing).
func readParked(conn net.Conn, bufs *reholdBuffers, route func(path string) http.Handler) (req *http.Request, h http.Handler, back net.Conn) {
	head, err := readHead(bufs.conn)
	if err != nil && !errors.Is(err, errNotHere) && (!errors.Is(err, io.EOF) || bufs.conn.Buffered() == 0) {
		return nil, nil, nil
	}
	if err == nil {
		req, h = reheldRequest(route, bufs, head)
	}
	if req == nil {
		// Left to net/http: too long, started with an empty line, ended
		// (io.EOF) before its head did, or not a held read.
		return nil, nil, newPrefixConn(conn, bufs.conn)
	}
	_, _ = bufs.conn.Discard(len(head))
	return req, h, nil
}

// reheldRequest parses head into a request this file may serve, with its
// handler, or returns nil when net/http should have it (the rules above).
func reheldRequest(route func(path string) http.Handler, bufs *reholdBuffers, head []byte) (*http.Request, http.Handler) {
	if route == nil || !bytes.HasPrefix(head, []byte("GET /")) {
		return nil, nil
	}
	bufs.head.Reset(head)
	bufs.parse.Reset(&bufs.head)
	req, err := http.ReadRequest(bufs.parse) // refuses two Hosts, and takes Host out of the header
	if err != nil || req.ProtoMajor != 1 || req.ProtoMinor != 1 || req.Host == "" || !httpguts.ValidHostHeader(req.Host) ||
		req.TransferEncoding != nil || req.Header["Content-Length"] != nil || req.Header["Expect"] != nil ||
		req.Header["Upgrade"] != nil || req.Header["Trailer"] != nil || !validHeader(req.Header) {
		return nil, nil
	}
	path := req.URL.RawPath
	if path == "" {
		path = req.URL.Path
	}
	h := route(path)
	if h == nil {
		return nil, nil
	}
	return req, h
}

// validHeader applies net/http's server checks of header names and values.
func validHeader(h http.Header) bool {
	for k, vv := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return false
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return false
			}
		}
	}
	return true
}

// reheldResponse is a connResponse that its handler may take the
// connection from, as a held request does (detachHold).
type reheldResponse struct {
	connResponse
	reader   *bufio.Reader // what was read from the connection
	hijacked bool
	handed   bool // the hijacker has reader
}

// Hijack gives the connection away. A request the client sent behind this
// one is in reader, which then goes with it; otherwise the hijacker reads
// the connection through a reader of its own, and reader goes back to
// its pool.
func (w *reheldResponse) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked || w.sent {
		return nil, nil, http.ErrHijacked
	}
	w.hijacked = true
	r := w.reader
	if r.Buffered() > 0 {
		w.handed = true
	} else {
		r = bufio.NewReaderSize(w.conn, 16)
	}
	return w.conn, bufio.NewReadWriter(r, bufio.NewWriterSize(w.conn, 16)), nil
}

// SetReadDeadline and SetWriteDeadline are http.ResponseController's.
func (w *reheldResponse) SetReadDeadline(t time.Time) error  { return w.conn.SetReadDeadline(t) }
func (w *reheldResponse) SetWriteDeadline(t time.Time) error { return w.conn.SetWriteDeadline(t) }

// prefixConn is a connection handed to net/http with what was already
// read from it, which its first reads return.
type prefixConn struct {
	net.Conn
	prefix []byte
}

// newPrefixConn is conn with what br buffered of it before it. When conn
// is itself a prefixConn, what br did not read of its prefix follows.
func newPrefixConn(conn net.Conn, br *bufio.Reader) net.Conn {
	var rest []byte
	if pc, ok := conn.(*prefixConn); ok {
		conn, rest = pc.Conn, pc.prefix
	}
	n := br.Buffered()
	if n == 0 && len(rest) == 0 {
		return conn
	}
	b, _ := br.Peek(n)
	return &prefixConn{Conn: conn, prefix: append(bytes.Clone(b), rest...)}
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// SyscallConn is the connection's once its prefix is read: until then a
// watch of the socket (watchConn) would miss what the prefix holds.
func (c *prefixConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if len(c.prefix) > 0 || !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}

// plainConn is the plain TCP connection under conn (the listener's
// GatherConn), or nil when conn is another (TLS, a test's pipe).
func plainConn(conn net.Conn) *GatherConn {
	if pc, ok := conn.(*prefixConn); ok {
		conn = pc.Conn
	}
	gc, _ := conn.(*GatherConn)
	return gc
}
