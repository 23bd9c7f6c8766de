// Package gcpace sets how far the heap may grow between garbage
// collections (GOGC) from the size of the live heap, after every
// collection. Go's default lets the heap double: on a small live heap the
// doubling is most of the process's memory, and collecting at half of it
// instead costs little, since a collection's work grows with what is live;
// on a large live heap (thousands of waiting listeners) collecting twice as
// often is what costs, in CPU and in the latency of the work that waits
// for it. So a small live heap grows by half, a large one doubles.
package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

const (
	// Small is the GOGC of a small live heap, Large that of a large one.
	Small, Large = 50, 100
	// A live heap above up is large; one below down is small again. The
	// gap keeps a heap near the line from switching at every collection.
	up, down = 32 << 20, 24 << 20
)

// Percent is the GOGC for a live heap of live bytes when current is the
// GOGC in force.
func Percent(live uint64, current int) int {
	switch {
	case live > up:
		return Large
	case live < down:
		return Small
	default:
		return current
	}
}

// Start sets GOGC to Small now, then to Percent of the live heap after
// each collection, for the life of the process. Call it once, and only
// when the environment does not set GOGC.
func Start() {
	current := Small
	debug.SetGCPercent(current)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var arm func()
	arm = func() {
		// A finalizer runs once the collection that found its object
		// unreachable is over: a hook after every collection, on the
		// runtime's finalizer goroutine, where current lives.
		runtime.SetFinalizer(new(sentinel), func(*sentinel) {
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				if p := Percent(sample[0].Value.Uint64(), current); p != current {
					debug.SetGCPercent(p)
					current = p
				}
			}
			arm()
		})
	}
	arm()
}

// sentinel is 16 bytes: smaller objects without pointers may share a block
// with others, and their finalizers need not run.
type sentinel struct{ _ [16]byte }
