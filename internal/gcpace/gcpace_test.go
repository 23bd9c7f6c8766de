package gcpace

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		live    uint64
		current int
		want    int
	}{
		{0, Large, Small}, {10 << 20, Small, Small}, {down - 1, Large, Small},
		{down, Large, Large}, {down, Small, Small}, {up, Small, Small}, {up, Large, Large},
		{up + 1, Small, Large}, {1 << 30, Small, Large},
	} {
		if got := Percent(tc.live, tc.current); got != tc.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", tc.live, tc.current, got, tc.want)
		}
	}
}

// Start moves GOGC with the live heap, collection after collection.
func TestStart(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	Start()
	if p := gogc(); p != Small {
		t.Fatalf("GOGC after Start: %d", p)
	}
	live := make([][]byte, 48)
	for i := range live {
		live[i] = make([]byte, 1<<20)
		live[i][0] = 1
	}
	waitFor(t, Large)
	runtime.KeepAlive(live)
	live = nil
	waitFor(t, Small)
}

func waitFor(t *testing.T, want int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); gogc() != want; {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC stayed %d, want %d", gogc(), want)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// gogc reads GOGC, which the runtime only returns when it is set.
func gogc() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}
