package httpapi

import (
	"errors"
	"net"
	"sync"
	"time"
)

// rejoinListener is the listener the server accepts on (Server.Listen). It
// also hands back to net/http the connections of held requests that left
// it (detachedHold): once such a request's answer is written, its
// connection waits in the epoll set, with no goroutine and no buffer, for
// the client's next request, and is then accepted again as a new
// connection. Keep-alive holds for the client; the server keeps nothing
// for a connection between its requests.
type rejoinListener struct {
	net.Listener
	idle     time.Duration // how long a parked connection waits for its next request
	accepted chan acceptResult
	back     chan net.Conn
	done     chan struct{}

	mu     sync.Mutex // guards parked, and closing done
	parked map[net.Conn]parkedConn

	admit *admission // how many connections may be in their first request at once

	// serve, when set, takes a plain TCP connection whose client sent its
	// next request (Server.serveParked), on a goroutine it starts; headWait
	// bounds its reading of the request's head.
	serve    func(net.Conn)
	headWait time.Duration
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

func newRejoinListener(ln net.Listener, idle time.Duration, admit *admission) *rejoinListener {
	if idle <= 0 {
		idle = 2 * time.Minute
	}
	l := &rejoinListener{Listener: ln, idle: idle, accepted: make(chan acceptResult), back: make(chan net.Conn, 64),
		done: make(chan struct{}), parked: map[net.Conn]parkedConn{}, admit: admit, headWait: 10 * time.Second}
	go l.acceptLoop()
	return l
}

// acceptLoop accepts on the inner listener for Accept, until it is closed.
func (l *rejoinListener) acceptLoop() {
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
func (l *rejoinListener) Accept() (net.Conn, error) {
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
func (l *rejoinListener) Close() error {
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
func (l *rejoinListener) closing() bool {
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
func (l *rejoinListener) park(conn net.Conn) {
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
func (l *rejoinListener) unpark(conn net.Conn, ready bool) {
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
	// it, or has closed done first; and serve counts conn (for
	// WaitDetached) before Close returns, as net/http's Shutdown, which
	// runs before WaitDetached, ends by closing its listeners.
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing() {
		_ = conn.Close()
		return
	}
	if l.serve != nil && plainConn(conn) != nil {
		l.serve(conn)
		return
	}
	select {
	case l.back <- conn:
	default:
		go l.rejoin(conn) // not on the epoll set's goroutine
	}
}

// rejoin hands conn to Accept, or closes it once the listener is.
func (l *rejoinListener) rejoin(conn net.Conn) {
	select {
	case l.back <- conn:
	case <-l.done:
		_ = conn.Close()
	}
}
