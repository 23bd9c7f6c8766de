// Package logwriter gathers log lines into fewer writes. The service logs
// one line per request; written one by one, each costs a system call,
// which made up a few percent of a 304's CPU. A Writer keeps the
// lines in memory and writes them together at most every interval, or at
// once when they fill the buffer, so a line may reach its destination up
// to one interval late, and the last interval's lines are lost if the
// process dies without Close.
package logwriter

import (
	"io"
	"sync"
	"time"
)

// Writer buffers whole writes (slog writes one line per call) and flushes
// them in order. It is safe for concurrent use.
type Writer struct {
	mu        sync.Mutex
	dst       io.Writer
	buf       []byte
	every     time.Duration
	limit     int
	scheduled bool
	closed    bool
	err       error // the first failed write, returned by Close
}

// New returns a Writer onto dst that flushes every interval, or when limit
// bytes are waiting.
func New(dst io.Writer, every time.Duration, limit int) *Writer {
	return &Writer{dst: dst, every: every, limit: limit, buf: make([]byte, 0, limit)}
}

// Write keeps p for the next flush. After Close it writes through.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.dst.Write(p)
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) >= w.limit {
		w.flushLocked()
	} else if !w.scheduled {
		w.scheduled = true
		time.AfterFunc(w.every, w.timed)
	}
	return len(p), nil
}

func (w *Writer) timed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scheduled = false
	w.flushLocked()
}

// Flush writes what is waiting now.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	return w.err
}

func (w *Writer) flushLocked() {
	if len(w.buf) == 0 {
		return
	}
	if _, err := w.dst.Write(w.buf); err != nil && w.err == nil {
		w.err = err
	}
	w.buf = w.buf[:0]
}

// Close flushes and makes later writes go straight through (a line logged
// while the process ends is not lost).
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	w.closed = true
	return w.err
}
