package logwriter

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a destination that counts its writes.
type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

func (s *syncBuffer) String() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String(), s.writes
}

func TestLinesWaitForTheIntervalThenGoTogether(t *testing.T) {
	var dst syncBuffer
	w := New(&dst, 50*time.Millisecond, 1<<16)
	for i := range 3 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	if got, _ := dst.String(); got != "" {
		t.Fatalf("written before the interval: %q", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, writes := dst.String()
		if got == "line 0\nline 1\nline 2\n" {
			if writes != 1 {
				t.Fatalf("%d writes for three lines in one interval", writes)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s: %q", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestAFullBufferIsWrittenAtOnce(t *testing.T) {
	var dst syncBuffer
	w := New(&dst, time.Hour, 16)
	fmt.Fprint(w, "0123456789\n")
	fmt.Fprint(w, "0123456789\n")
	if got, _ := dst.String(); got != "0123456789\n0123456789\n" {
		t.Fatalf("got %q", got)
	}
}

func TestCloseFlushesAndLaterLinesGoThrough(t *testing.T) {
	var dst syncBuffer
	w := New(&dst, time.Hour, 1<<16)
	fmt.Fprint(w, "before\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(w, "after\n")
	if got, _ := dst.String(); got != "before\nafter\n" {
		t.Fatalf("got %q", got)
	}
}

// Concurrent writers never interleave inside a line, and nothing is lost.
func TestConcurrentLinesStayWhole(t *testing.T) {
	var dst syncBuffer
	w := New(&dst, time.Millisecond, 256)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				fmt.Fprintf(w, "writer %d line %03d %s\n", g, i, strings.Repeat("x", g*7))
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := dst.String()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 1600 {
		t.Fatalf("%d lines, want 1600", len(lines))
	}
	for _, l := range lines {
		var g, i int
		var xs string
		if n, _ := fmt.Sscanf(l, "writer %d line %d %s", &g, &i, &xs); n < 2 || len(xs) != g*7 {
			t.Fatalf("torn line %q", l)
		}
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestAFailedWriteIsReported(t *testing.T) {
	w := New(failing{}, time.Hour, 1<<16)
	fmt.Fprint(w, "x\n")
	if err := w.Close(); err == nil {
		t.Fatal("Close hid a failed write")
	}
}
