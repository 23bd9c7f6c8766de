package parked

import (
	"context"
	"io"
	"net"
	"sync"
)

// net/http writes a response through a 4 KiB buffer on its connection. A
// body longer than that buffer's room goes out in two writes: the buffer
// (the head and the body's first bytes), then the rest of the body. On a
// socket each write is a system call that also hands the bytes to the
// receiver, and the first of the two is as costly as the second (issue 30:
// a room of 300 events spent a third of its sending time on that 4 KiB).
//
// GatherConn is the server's side of a plain TCP connection (Listener
// wraps every one it accepts). While the server writes an answer that
// states its length (between Gather and Release), the connection gathers:
// net/http's flush of its buffer is kept, and goes out with the next large
// write in one writev, or when the handler returns or flushes. Otherwise
// every write goes straight through, so a stream's flush is never held
// back.
type GatherConn struct {
	*net.TCPConn
	gathering bool
	pending   *[]byte // what was kept while gathering; from gatherBuffers
	vec       [2][]byte
	iov       net.Buffers // over vec: a writev allocates nothing
}

// gatherBuffers hold what a gathering connection keeps; net/http's flush
// is 4 KiB.
var gatherBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// gatherKeep is the largest write a gathering connection keeps back; a
// larger one goes out at once, with what was kept before it.
const gatherKeep = 16 << 10

// wrapGather wraps a plain TCP connection; any other (TLS, a connection
// already wrapped, a test's pipe) is returned as it is.
func wrapGather(c net.Conn) net.Conn {
	if tc, ok := c.(*net.TCPConn); ok {
		return &GatherConn{TCPConn: tc}
	}
	return c
}

func (c *GatherConn) Write(p []byte) (int, error) {
	if !c.gathering {
		return c.TCPConn.Write(p)
	}
	if c.pending == nil && len(p) <= gatherKeep {
		c.pending = gatherBuffers.Get().(*[]byte)
	}
	if c.pending != nil && len(*c.pending)+len(p) <= gatherKeep {
		*c.pending = append(*c.pending, p...)
		return len(p), nil
	}
	return c.writeWith(p)
}

// writeWith sends what is pending and then p, in one writev, and reports
// how much of p went.
func (c *GatherConn) writeWith(p []byte) (int, error) {
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
func (c *GatherConn) ReadFrom(r io.Reader) (int64, error) {
	if err := c.Release(); err != nil {
		return 0, err
	}
	return c.TCPConn.ReadFrom(r)
}

// Gather starts keeping small writes back; Release ends it. Call both on
// the goroutine that writes the answer, and never once the connection has
// left net/http.
func (c *GatherConn) Gather() { c.gathering = true }

// Gathering reports whether small writes are kept back now.
func (c *GatherConn) Gathering() bool { return c.gathering }

// Release ends gathering and sends what it kept.
func (c *GatherConn) Release() error {
	c.gathering = false
	if c.pending == nil {
		return nil
	}
	_, err := c.writeWith(nil)
	return err
}

func (c *GatherConn) putPending() {
	if c.pending != nil {
		*c.pending = (*c.pending)[:0]
		gatherBuffers.Put(c.pending)
		c.pending = nil
	}
}

type gatherKey struct{}

// GatherFrom is the connection under a request's context, when it can
// gather (a plain TCP connection accepted by a Listener whose ConnContext
// the server calls), or nil.
func GatherFrom(ctx context.Context) *GatherConn {
	gc, _ := ctx.Value(gatherKey{}).(*GatherConn)
	return gc
}

// ConnContext is the http.Server's ConnContext of a server serving on l:
// it lets GatherFrom reach a request's connection, and keeps the server's
// context (its BaseContext, with http.ServerContextKey), under which the
// requests served here run.
func (l *Listener) ConnContext(ctx context.Context, c net.Conn) context.Context {
	if l.base.Load() == nil {
		l.base.CompareAndSwap(nil, &ctx)
	}
	return withGather(ctx, c)
}

func withGather(ctx context.Context, c net.Conn) context.Context {
	if gc := plainConn(c); gc != nil {
		return context.WithValue(ctx, gatherKey{}, gc)
	}
	return ctx
}
