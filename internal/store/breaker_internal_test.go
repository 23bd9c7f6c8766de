package store

import "testing"

// The context of a breaker that opened before anyone asked for it has
// already ended, and one asked for after it closed has not.
func TestBreakerContextWhileOpen(t *testing.T) {
	t.Parallel()
	var b breaker
	b.set(true)
	if b.context().Err() == nil {
		t.Fatal("the breaker is open and its context has not ended")
	}
	b.set(false)
	if err := b.context().Err(); err != nil {
		t.Fatalf("the breaker closed and its context ended: %v", err)
	}
}
