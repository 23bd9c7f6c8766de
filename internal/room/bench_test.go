package room

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkEvaluate: the decision rule over a full room (50 participants,
// one terminal event each plus 4,950 advisory events).
func BenchmarkEvaluate(b *testing.B) {
	roster := make([]Member, 50)
	var events []Event
	seq := int64(0)
	for i := range roster {
		roster[i] = Member{ID: fmt.Sprintf("p%02d", i), Required: i%5 != 0}
		for j := 0; j < 99; j++ {
			seq++
			events = append(events, Event{ID: fmt.Sprint(seq), Seq: seq, ParticipantID: roster[i].ID, Revision: 1, Action: ActionComment, CreatedAt: t0})
		}
	}
	for i := range roster {
		seq++
		events = append(events, Event{ID: fmt.Sprint(seq), Seq: seq, ParticipantID: roster[i].ID, Revision: 1, Action: ActionAgree, CreatedAt: t0})
	}
	now := t0.Add(time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		if Evaluate(1, roster, events, deadline, now).Status != StatusReached {
			b.Fatal("not reached")
		}
	}
}

func BenchmarkLock(b *testing.B) {
	r := sampleRevision()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Lock(r); err != nil {
			b.Fatal(err)
		}
	}
}
