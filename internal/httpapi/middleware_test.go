package httpapi

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// fakeBreaker is a Breaker whose state the test sets; trip opens it.
type fakeBreaker struct {
	refusing  atomic.Bool
	suspected atomic.Int32
	tripped   context.Context
	trip      context.CancelFunc
}

func newFakeBreaker() *fakeBreaker {
	b := &fakeBreaker{}
	b.tripped, b.trip = context.WithCancel(context.Background())
	return b
}

func (b *fakeBreaker) Refusing() bool           { return b.refusing.Load() }
func (b *fakeBreaker) Suspect()                 { b.suspected.Add(1) }
func (b *fakeBreaker) Tripped() context.Context { return b.tripped }

type testValueKey struct{}

// The database deadline keeps the request's values but not its
// cancellation: a client leaving does not cut a statement short.
func TestDeadlineKeepsValuesNotCancellation(t *testing.T) {
	b := newFakeBreaker()
	s := &Server{dbTimeout: time.Minute, breaker: b}
	parent, leave := context.WithCancel(context.WithValue(context.Background(), testValueKey{}, "v"))
	ctx, done := s.deadline(parent)
	leave()
	if ctx.Err() != nil {
		t.Fatalf("the client's leaving ended the database work: %v", ctx.Err())
	}
	if ctx.Value(testValueKey{}) != "v" {
		t.Fatal("the request's values are lost")
	}
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > time.Minute || time.Until(d) < 50*time.Second {
		t.Fatalf("deadline %v, %v; want about a minute from now", d, ok)
	}
	done()
	if ctx.Err() == nil {
		t.Fatal("cancel did not end the context")
	}
	if b.suspected.Load() != 0 {
		t.Fatal("work that ended in time was reported to the breaker")
	}
}

func TestDeadlineTellsTheBreakerOfWorkOutOfTime(t *testing.T) {
	b := newFakeBreaker()
	s := &Server{dbTimeout: 10 * time.Millisecond, breaker: b}
	ctx, done := s.deadline(context.Background())
	<-ctx.Done()
	done()
	if b.suspected.Load() != 1 {
		t.Fatalf("suspected %d times, want once", b.suspected.Load())
	}

	// While the breaker refuses, the deadline has passed already.
	b.refusing.Store(true)
	ctx, done = s.deadline(context.Background())
	defer done()
	if ctx.Err() != context.DeadlineExceeded {
		t.Fatalf("refusing: %v, want the deadline passed", ctx.Err())
	}
}

// Work already waiting when the breaker opens stops, as an outage (its
// cause is not the cancellation a client's leaving would be).
func TestDeadlineEndsWaitingWorkWhenTheBreakerOpens(t *testing.T) {
	b := newFakeBreaker()
	s := &Server{dbTimeout: time.Minute, breaker: b}
	ctx, done := s.deadline(context.Background())
	defer done()
	b.trip()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the breaker opened and the waiting work went on")
	}
	if cause := context.Cause(ctx); !errors.Is(cause, errDatabaseNotAnswering) {
		t.Fatalf("cause %v, want errDatabaseNotAnswering", cause)
	}
}
