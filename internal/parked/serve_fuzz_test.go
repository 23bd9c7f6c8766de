package parked

import (
	"bufio"
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// FuzzParkedRequest holds the parked path's request reader (readParked) to
// net/http's own, for any bytes a client sends on a parked connection,
// arriving chunk bytes at a time, some of them (prefix) already read off
// the connection before (a prefixConn): either the parked path reads a
// request, and net/http reads the same request from the same bytes
// (http.ReadRequest: method, target, protocol, headers, host, no body,
// the same number of bytes; a net/http server given those bytes serves
// it too), or it hands the connection back with every byte it read, so
// that net/http reads exactly what the client sent.
func FuzzParkedRequest(f *testing.F) {
	for _, seed := range []string{
		get("/hold"),
		get("/hold", "Prefer: wait=30\r\n", "If-None-Match: \"x\"\r\n"),
		get("/hold?now", "Connection: close\r\n"),
		get("/hold") + get("/plain"),
		"GET /hold HTTP/1.1\nHost: x\n\n",
		"GET /hold HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"GET /hold HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
		"GET /hold HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET /hold HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n Transfer-Encoding: chunked\r\n\r\n",
		"GET /hold HTTP/1.1\r\nHost: x\r\n Host: y\r\n\r\n",
		"GET /hold HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
		"GET /hold HTTP/1.1\r\nHost: x\rY: z\r\n\r\n",
		"GET /hold HTTP/1.1\r\nHost: x\r\n\rX: y\r\n\r\n",
		"GET /hold HTTP/1.1\r\nHost:\r\n\r\n",
		"GET /hold HTTP/1.1\r\nHost: a b\r\n\r\n",
		"GET http://x/hold HTTP/1.1\r\nHost: y\r\n\r\n",
		"GET /hold HTTP/1.0\r\nHost: x\r\n\r\n",
		"GET /hold HTTP/2.0\r\nHost: x\r\n\r\n",
		"GET /hold HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n",
		"GET /hold HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
		"GET /hold HTTP/1.1\r\nHost: x\r\nTrailer: X\r\n\r\n",
		"GET /hold HTTP/1.1\r\nHost: x\r\nX Bad: 1\r\n\r\n",
		"GET /hold HTTP/1.1\r\nHost: x\r\nX-Nul: a\x00b\r\n\r\n",
		"GET /h%2Fold?a=%zz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET  /hold HTTP/1.1\r\nHost: x\r\n\r\n",
		"\r\n" + get("/hold"),
		"GET /hold HTTP/1.1\r\nHo",
		"GET /hold HTTP/1.1\r\nHost: x\r\nX-Long: " + strings.Repeat("a", 5000) + "\r\n\r\n",
		"",
	} {
		f.Add([]byte(seed), uint8(0), uint16(0))
		f.Add([]byte(seed), uint8(7), uint16(9))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8, prefix uint16) {
		split := int(prefix) % (len(in) + 1)
		script := &scriptConn{in: bytes.Clone(in[split:]), chunk: max(1, int(chunk))}
		var conn net.Conn = script
		if split > 0 {
			conn = &prefixConn{Conn: script, prefix: bytes.Clone(in[:split])}
		}
		bufs := reholdPool.Get().(*reholdBuffers)
		defer bufs.release()
		bufs.conn.Reset(conn)
		req, _, back := readParked(conn, bufs, func(string) http.Handler { return http.NotFoundHandler() })
		switch {
		case req == nil && back == nil:
			if len(in) != 0 {
				t.Fatalf("closed a connection that sent %q", in)
			}
		case req == nil:
			got, err := io.ReadAll(back)
			if err != nil || !bytes.Equal(got, in) {
				t.Fatalf("net/http would read %d bytes %.200q (%v), the client sent %d: %.200q", len(got), got, err, len(in), in)
			}
		default:
			left := bufs.conn.Buffered() + len(script.in)
			if pc, ok := conn.(*prefixConn); ok {
				left += len(pc.prefix)
			}
			checkAsNetHTTP(t, in, req, len(in)-left)
		}
	})
}

// checkAsNetHTTP checks that net/http reads req from in, using read bytes
// of it, and that its server serves it.
func checkAsNetHTTP(t *testing.T, in []byte, req *http.Request, read int) {
	t.Helper()
	src := bytes.NewReader(in)
	br := bufio.NewReader(src)
	want, err := http.ReadRequest(br)
	if err != nil {
		t.Fatalf("served %q, which net/http refuses: %v", in, err)
	}
	if body, _ := io.ReadAll(want.Body); len(body) != 0 {
		t.Fatalf("served %q, whose body net/http reads as %q", in, body)
	}
	if n := len(in) - src.Len() - br.Buffered(); n != read {
		t.Fatalf("read %d bytes of %q, net/http %d", read, in, n)
	}
	if !sameRequest(req, want) {
		t.Fatalf("read %q as %+v, net/http as %+v", in, req, want)
	}
	served := serveOnce(in[:read])
	if served == nil || !sameRequest(req, served) {
		t.Fatalf("read %q as %+v, net/http's server serves %+v", in, req, served)
	}
}

// sameRequest compares what a handler sees of a request.
func sameRequest(a, b *http.Request) bool {
	return a.Method == b.Method && a.RequestURI == b.RequestURI && a.URL.String() == b.URL.String() &&
		a.Proto == b.Proto && a.ProtoMajor == b.ProtoMajor && a.ProtoMinor == b.ProtoMinor &&
		a.Host == b.Host && a.Close == b.Close && a.ContentLength == b.ContentLength &&
		reflect.DeepEqual(a.Header, b.Header) && a.TransferEncoding == nil && b.TransferEncoding == nil &&
		a.Trailer == nil && b.Trailer == nil
}

var quietLog = log.New(io.Discard, "", 0)

// serveOnce gives in to a net/http server as a connection's bytes and
// returns the first request its handler was given, or nil.
func serveOnce(in []byte) *http.Request {
	got := make(chan *http.Request, 1)
	srv := &http.Server{ErrorLog: quietLog, Handler: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Clone(r.Context()):
		default:
		}
	})}
	conn := &scriptConn{in: bytes.Clone(in), chunk: len(in) + 1, closed: make(chan struct{})}
	ln := &oneConnListener{conn: conn, done: make(chan struct{})}
	go func() { _ = srv.Serve(ln) }()
	<-conn.closed // net/http closes it once it reads to its end
	_ = srv.Close()
	select {
	case r := <-got:
		return r
	default:
		return nil
	}
}

// scriptConn is a connection whose client sends in, chunk bytes a read,
// and then closes it; what is written to it is dropped.
type scriptConn struct {
	in     []byte
	chunk  int
	once   sync.Once
	closed chan struct{} // closed by Close, when set
}

func (c *scriptConn) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.chunk)], c.in)
	c.in = c.in[n:]
	return n, nil
}

func (c *scriptConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *scriptConn) Close() error {
	c.once.Do(func() {
		if c.closed != nil {
			close(c.closed)
		}
	})
	return nil
}
func (c *scriptConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }
func (c *scriptConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (c *scriptConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptConn) SetWriteDeadline(time.Time) error { return nil }

// oneConnListener accepts conn once, then nothing until it is closed.
type oneConnListener struct {
	conn net.Conn
	once sync.Once
	done chan struct{}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	if c := l.conn; c != nil {
		l.conn = nil
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }
