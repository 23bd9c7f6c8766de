package parked

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// A reconnect storm (every client of a replica connecting again within
// seconds, as after a restart) brings thousands of connections at once.
// net/http gives each one a goroutine and 8 KiB of buffers as it accepts
// it, and starts its first request at once: on a machine that serves a
// thousand a second, most of them then wait together, half served, and
// their memory adds up (issue 30: 4,000 listeners attaching).
//
// admission lets a bounded number of connections be in their first
// request at once; the others wait in the kernel's accept queue. A
// connection counts from the moment Accept hands it to net/http until its
// first request is answered (it turns idle), is taken from net/http
// (hijacked) or its connection closes (Listener.ConnState), and at most for
// admitFor: a client that connects and sends nothing holds its place that
// long, not until net/http's header timeout. A connection's later requests
// are not counted, nor is a connection coming back from a held request
// (Listener): its client is already served, and it would otherwise
// wait behind a storm it is not part of.
type admission struct {
	slots chan struct{}
	hold  time.Duration

	mu sync.Mutex
	in map[net.Conn]*time.Timer // the admitted connections, with the timer that frees each place
}

// admitPerCPU is how many connections per CPU may be in their first
// request at once; admitFor is the longest one holds its place.
const (
	admitPerCPU = 64
	admitFor    = time.Second
)

func newAdmission(n int, hold time.Duration) *admission {
	return &admission{slots: make(chan struct{}, n), hold: hold, in: map[net.Conn]*time.Timer{}}
}

// place is where a send takes a place; it blocks while every place is
// taken.
func (a *admission) place() chan<- struct{} { return a.slots }

// unused gives back a place taken for no connection.
func (a *admission) unused() { <-a.slots }

// admit counts c in the place taken for it, until leave or a.hold.
func (a *admission) admit(c net.Conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.in[c] = time.AfterFunc(a.hold, func() { a.leave(c) })
}

// leave frees c's place; for a connection not counted it does nothing.
func (a *admission) leave(c net.Conn) {
	a.mu.Lock()
	t, ok := a.in[c]
	delete(a.in, c)
	a.mu.Unlock()
	if ok {
		t.Stop()
		<-a.slots
	}
}

// admitted is the number of connections counted now.
func (a *admission) admitted() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.in)
}

// ConnState is the http.Server's ConnState of a server serving on l: a
// connection's first request ends its admission when it turns idle, is
// hijacked or closes.
func (l *Listener) ConnState(c net.Conn, state http.ConnState) {
	switch state {
	case http.StateIdle, http.StateHijacked, http.StateClosed:
		l.admit.leave(c)
	}
}

// Admitted is the number of connections in their first request now.
func (l *Listener) Admitted() int { return l.admit.admitted() }
