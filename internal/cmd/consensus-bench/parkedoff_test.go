package main

import "testing"

// The run without parked connections starts on a fresh process: its peak
// is judged as from the parked run's start, not from its own lower one.
func TestOffPeakRSSStartsWhereTheParkedRunStarted(t *testing.T) {
	on := &listenerResult{startRSS: 60 << 10, peakRSS: 130 << 10}
	off := &listenerResult{startRSS: 35 << 10, peakRSS: 250 << 10}
	if got := offPeakRSS(on, off); got != 275<<10 {
		t.Fatalf("offPeakRSS = %d KiB, want %d", got, 275<<10)
	}
	if got := offPeakRSS(nil, off); got != off.peakRSS {
		t.Fatalf("without a parked run: %d, want the measured %d", got, off.peakRSS)
	}
	if got := offPeakRSS(on, &listenerResult{peakRSS: 250 << 10}); got != 250<<10 {
		t.Fatalf("without a start reading: %d, want the measured peak", got)
	}
}
