package e2e

import (
	"fmt"
	"testing"
)

// BenchmarkPostComment: one advisory event end to end (HTTP, token check,
// agreement row lock, idempotency lookup, insert, commit) on a real
// PostgreSQL. Each participant stores at most 100 events, so a fresh
// agreement is made every 100 iterations.
func BenchmarkPostComment(b *testing.B) {
	s := startServer(b)
	var a *agent
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%100 == 0 {
			b.StopTimer()
			c := s.create("Bench", s.future())
			a = s.agent(c.Participants[0].InvitationID).join()
			b.StartTimer()
		}
		if r := a.post(fmt.Sprintf("bench-%08d", i), "comment", "benchmark comment"); r.StatusCode != 201 {
			b.Fatalf("status %d", r.StatusCode)
		}
	}
}

// BenchmarkRoom: one room read of a room holding 100 events.
func BenchmarkRoom(b *testing.B) {
	s := startServer(b)
	c := s.create("Bench room", s.future())
	a := s.agent(c.Participants[0].InvitationID).join()
	for i := 0; i < 100; i++ {
		a.post(fmt.Sprintf("bench-room-%04d", i), "comment", "x")
	}
	b.ResetTimer()
	for b.Loop() {
		if r := a.room(); r.StatusCode != 200 {
			b.Fatalf("status %d", r.StatusCode)
		}
	}
}
