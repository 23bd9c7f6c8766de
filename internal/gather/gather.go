// Package gather sends a whole HTTP answer in one write.
//
// net/http writes a response through a 4 KiB buffer on its connection. A
// body longer than that buffer's room goes out in two writes: the buffer
// (the head and the body's first bytes), then the rest of the body. On a
// socket each write is a system call that also hands the bytes to the
// receiver, and the first of the two costs as much as the second: a room
// of 300 events spent a third of its sending time on that 4 KiB.
//
// Listen wraps each plain TCP connection a server accepts in a Conn. While
// the server writes an answer that states its length (between Gather and
// Release), the Conn keeps net/http's flush of its buffer back and sends
// it with the next large write in one writev, or when the handler returns
// or flushes. Otherwise every write goes straight through, so a stream's
// flush is never held back.
package gather

import (
	"context"
	"io"
	"net"
	"sync"
)

// Conn is the server's side of a plain TCP connection accepted by a
// Listen listener.
type Conn struct {
	*net.TCPConn
	gathering bool
	pending   *[]byte // what was kept while gathering; from buffers
	vec       [2][]byte
	iov       net.Buffers // over vec: a writev allocates nothing
}

// buffers hold what a gathering connection keeps; net/http's flush is 4 KiB.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// keep is the largest write a gathering connection keeps back; a larger one
// goes out at once, with what was kept before it.
const keep = 16 << 10

// Wrap wraps a plain TCP connection; any other (TLS, a test's pipe) is
// returned as it is.
func Wrap(c net.Conn) net.Conn {
	if tc, ok := c.(*net.TCPConn); ok {
		return &Conn{TCPConn: tc}
	}
	return c
}

func (c *Conn) Write(p []byte) (int, error) {
	if !c.gathering {
		return c.TCPConn.Write(p)
	}
	if c.pending == nil && len(p) <= keep {
		c.pending = buffers.Get().(*[]byte)
	}
	if c.pending != nil && len(*c.pending)+len(p) <= keep {
		*c.pending = append(*c.pending, p...)
		return len(p), nil
	}
	return c.writeWith(p)
}

// writeWith sends what is pending and then p, in one writev, and reports
// how much of p went.
func (c *Conn) writeWith(p []byte) (int, error) {
	var kept []byte
	if c.pending != nil {
		kept = *c.pending
	}
	if len(kept) == 0 {
		c.putPending()
		if len(p) == 0 {
			return 0, nil
		}
		return c.TCPConn.Write(p)
	}
	c.vec = [2][]byte{kept, p}
	c.iov = c.vec[:]
	n, err := c.iov.WriteTo(c.TCPConn)
	c.vec, c.iov = [2][]byte{}, nil
	c.putPending()
	return int(max(0, n-int64(len(kept)))), err
}

// ReadFrom sends what is pending before the connection copies from r
// (net/http uses it for a body read from a file).
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	if err := c.Release(); err != nil {
		return 0, err
	}
	return c.TCPConn.ReadFrom(r)
}

// Gather starts keeping small writes back; Release ends it. Call both on
// the goroutine that writes the answer.
func (c *Conn) Gather() { c.gathering = true }

// Gathering reports whether small writes are kept back now.
func (c *Conn) Gathering() bool { return c.gathering }

// Release ends gathering and sends what it kept.
func (c *Conn) Release() error {
	c.gathering = false
	if c.pending == nil {
		return nil
	}
	_, err := c.writeWith(nil)
	return err
}

func (c *Conn) putPending() {
	if c.pending != nil {
		*c.pending = (*c.pending)[:0]
		buffers.Put(c.pending)
		c.pending = nil
	}
}

// Listen wraps every plain TCP connection ln accepts in a Conn. Serve it
// with an http.Server whose ConnContext is ConnContext.
func Listen(ln net.Listener) net.Listener { return listener{ln} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return Wrap(c), nil
}

type key struct{}

// ConnContext is an http.Server's ConnContext: it lets From reach a
// request's connection.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if gc, ok := c.(*Conn); ok {
		return context.WithValue(ctx, key{}, gc)
	}
	return ctx
}

// From is the connection under a request's context when it can gather (a
// Conn, set by ConnContext), or nil.
func From(ctx context.Context) *Conn {
	gc, _ := ctx.Value(key{}).(*Conn)
	return gc
}
