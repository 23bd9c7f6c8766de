package parked

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Listener is the listener the server accepts on (Listen). It also hands
// back to net/http the connections of held requests that left it (Hold):
// once such a request's answer is written, its connection waits in the
// epoll set, with no goroutine and no buffer, for the client's next
// request, which is served here when it is another held read (serve.go)
// or else accepted again as a new connection. Keep-alive holds for the
// client; the server keeps nothing for a connection between its requests.
type Listener struct {
	net.Listener
	idle     time.Duration // how long a parked connection waits for its next request
	accepted chan acceptResult
	back     chan net.Conn
	done     chan struct{}

	mu     sync.Mutex // guards parked, and closing done
	parked map[net.Conn]parkedConn

	admit *admission // how many connections may be in their first request at once

	// route, headWait and log serve a parked connection's next request
	// (Options); base is the server's context, as ConnContext last saw
	// it; serving counts the requests served here, for Wait.
	route    func(path string) http.Handler
	headWait time.Duration
	log      *slog.Logger
	base     atomic.Pointer[context.Context]
	serving  sync.WaitGroup
}

// Options configures a Listener.
type Options struct {
	// Idle is how long a parked connection waits for its client's next
	// request (the server's IdleTimeout); zero means 2 minutes.
	Idle time.Duration
	// HeadWait bounds the reading of a parked connection's next request
	// head, as the server's ReadHeaderTimeout does in net/http; zero
	// means 10 seconds.
	HeadWait time.Duration
	// Route is the handler that serves a held read of path, or nil when
	// path is not one: such a request is net/http's. Nil serves none here.
	Route func(path string) http.Handler
	// Log hears of a handler's panic in a request served here.
	Log *slog.Logger
}

// Listen wraps ln. Serve the http.Server on the result, with its
// ConnContext and ConnState set to the Listener's. Close closes ln.
func Listen(ln net.Listener, o Options) *Listener {
	if o.Idle <= 0 {
		o.Idle = 2 * time.Minute
	}
	if o.HeadWait <= 0 {
		o.HeadWait = 10 * time.Second
	}
	l := newListener(ln, o.Idle, newAdmission(admitPerCPU*runtime.GOMAXPROCS(0), admitFor))
	l.route, l.headWait, l.log = o.Route, o.HeadWait, o.Log
	return l
}

// Wait waits until every request served here (serve.go) has ended or
// handed its connection on, or ctx ends. Call it after the http.Server's
// Shutdown, which closes the Listener: none starts after that.
func (l *Listener) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { l.serving.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type acceptResult struct {
	conn net.Conn
	err  error
}

// parkedConn is what ends a parked connection's wait.
type parkedConn struct {
	stop  func() // the epoll watch
	timer *time.Timer
}

func newListener(ln net.Listener, idle time.Duration, admit *admission) *Listener {
	l := &Listener{Listener: ln, idle: idle, accepted: make(chan acceptResult), back: make(chan net.Conn, 64),
		done: make(chan struct{}), parked: map[net.Conn]parkedConn{}, admit: admit, headWait: 10 * time.Second}
	go l.acceptLoop()
	return l
}

// acceptLoop accepts on the inner listener for Accept, until it is closed.
func (l *Listener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		select {
		case l.accepted <- acceptResult{wrapGather(c), err}:
		case <-l.done:
			if c != nil {
				_ = c.Close()
			}
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

// Accept returns the next connection: one coming back from a held request
// at once (it is a kept-alive connection's next request, which admission
// does not count), a new one once admission has a place for it.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.back:
		return c, nil
	default:
	}
	select {
	case c := <-l.back:
		return c, nil
	case l.admit.place() <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	select {
	case r := <-l.accepted:
		if r.err != nil {
			l.admit.unused()
			return nil, r.err
		}
		l.admit.admit(r.conn)
		return r.conn, nil
	case c := <-l.back:
		l.admit.unused()
		return c, nil
	case <-l.done:
		l.admit.unused()
		return nil, net.ErrClosed
	}
}

// Close closes the inner listener and every parked connection: net/http
// closes its listeners when it shuts down, and a parked connection is an
// idle one.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closing() {
		l.mu.Unlock()
		return nil
	}
	close(l.done)
	parked := l.parked
	l.parked = nil
	l.mu.Unlock()
	for c, p := range parked {
		p.stop()
		p.timer.Stop()
		_ = c.Close()
	}
	for {
		select {
		case c := <-l.back: // rejoining, but no Accept will take it now
			_ = c.Close()
		default:
			return l.Listener.Close()
		}
	}
}

// closing reports whether the listener is closed (the server stops): an
// answer written now says Connection: close.
func (l *Listener) closing() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// park keeps conn, whose last answer is written, until its client sends
// the next request (it then rejoins net/http), closes it, or stays idle
// for l.idle (then it is closed).
func (l *Listener) park(conn net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing() {
		_ = conn.Close()
		return
	}
	stop, ok := watchConn(conn, func(bool) { l.unpark(conn, true) })
	if !ok {
		go l.rejoin(conn)
		return
	}
	l.parked[conn] = parkedConn{stop: stop, timer: time.AfterFunc(l.idle, func() { l.unpark(conn, false) })}
}

// unpark ends conn's wait: ready, it goes to serve or rejoins net/http
// (which reads what the client sent, or finds it closed); otherwise it is
// closed.
func (l *Listener) unpark(conn net.Conn, ready bool) {
	l.mu.Lock()
	p, ok := l.parked[conn]
	delete(l.parked, conn)
	l.mu.Unlock()
	if !ok {
		return // Close, or the other of the watch and the timer, came first
	}
	p.stop()
	p.timer.Stop()
	if !ready {
		_ = conn.Close()
		return
	}
	// Under the lock, so Close either finds conn in back when it drains
	// it, or has closed done first; and serving counts conn (for Wait)
	// before Close returns, as net/http's Shutdown, which
	// runs before WaitDetached, ends by closing its listeners.
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing() {
		_ = conn.Close()
		return
	}
	if l.route != nil && plainConn(conn) != nil {
		l.serving.Add(1)
		go func() {
			defer l.serving.Done()
			l.serveParked(conn)
		}()
		return
	}
	select {
	case l.back <- conn:
	default:
		go l.rejoin(conn) // not on the epoll set's goroutine
	}
}

// rejoin hands conn to Accept, or closes it once the listener is.
func (l *Listener) rejoin(conn net.Conn) {
	select {
	case l.back <- conn:
	case <-l.done:
		_ = conn.Close()
	}
}
