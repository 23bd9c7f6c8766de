package servertest

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"
)

// Clock is real time plus an offset a test moves forward, so deadlines and
// expiries pass without waiting. It is safe for concurrent use.
type Clock struct{ offset atomic.Int64 }

// Now is the daemon's current time.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// Logs collects the daemon's JSON log lines for a test to scan (for
// example, that no credential was logged). It is safe for concurrent use.
type Logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends log output.
func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns everything logged so far.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
