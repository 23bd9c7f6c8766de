package venue

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/store"
)

// encodeEvents joins each event's JSON, as encode writes it, with commas,
// says where each ends, and makes its bytes once: the estimate covers
// events of every usual shape, and where it falls short (a body escaped at
// length) the bytes kept still have at most an eighth spare.
func TestEncodeEventsMakesTheJoinedJSONOnce(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 5, 4, 44, 14, 123456000, time.UTC)
	ev := func(seq int64, body string) store.Event {
		return store.Event{ID: uuid.New(), Seq: seq, ParticipantID: uuid.New(), Action: "comment", Body: body, Revision: 1,
			CreatedAt: at, PrevHash: canon.Digest([]byte("p")), Hash: canon.Digest([]byte("h")), CommandDigest: canon.Digest([]byte("c"))}
	}
	signed := ev(2, "Signed, with \"quotes\" <and> markup & a newline\n.")
	signed.Signature = bytes.Repeat([]byte{7}, 64)
	addressed := ev(3, "A question for two.")
	addressed.Action = "question"
	addressed.To = []uuid.UUID{uuid.New(), uuid.New()}
	reply := ev(4, "The answer.")
	reply.InReplyTo = uuid.NullUUID{UUID: addressed.ID, Valid: true}
	reply.Evidence = `{"kind":"email","dkim":"pass"}`
	long := ev(5, strings.Repeat("ünïcödé ", 500))
	// Control characters take six bytes each in JSON (\u0001): the
	// estimate falls short, and the buffer grows past it.
	escaped := ev(1, strings.Repeat("\x01", 10))
	sets := map[string][]store.Event{
		"one":     {ev(1, "Benchmark comment: the rehearsal passed.")},
		"mixed":   {ev(1, ""), signed, addressed, reply, long},
		"escaped": {escaped},
		"many":    nil,
	}
	for i := range 300 {
		sets["many"] = append(sets["many"], ev(int64(i+1), "Benchmark comment in agreement 7: the rehearsal passed, rollback was tested within fifteen minutes."))
	}
	for name, events := range sets {
		out, ends, err := encodeEvents(events)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var want []byte
		var wantEnds []int
		for i, e := range events {
			one, err := encode(eventView(e))
			if err != nil {
				t.Fatal(err)
			}
			if i > 0 {
				want = append(want, ',')
			}
			want = append(want, one...)
			wantEnds = append(wantEnds, len(want))
		}
		if !bytes.Equal(out, want) {
			t.Errorf("%s: joined JSON differs:\n got %.200s\nwant %.200s", name, out, want)
		}
		if len(ends) != len(wantEnds) {
			t.Fatalf("%s: %d ends, want %d", name, len(ends), len(wantEnds))
		}
		for i := range ends {
			if ends[i] != wantEnds[i] {
				t.Fatalf("%s: end %d at %d, want %d", name, i, ends[i], wantEnds[i])
			}
		}
		if !json.Valid(append(append([]byte{'['}, out...), ']')) {
			t.Errorf("%s: not a JSON list's members", name)
		}
		if est := encodedSizeOf(events); (est < len(out)) != (name == "escaped") {
			t.Errorf("%s: estimate %d for %d bytes", name, est, len(out))
		}
		if spare := cap(out) - len(out); spare > len(out)/8 {
			t.Errorf("%s: %d bytes spare of %d", name, spare, len(out))
		}
	}
	if out, ends, err := encodeEvents(nil); err != nil || len(out) != 0 || len(ends) != 0 {
		t.Errorf("no events: %q %v %v", out, ends, err)
	}
}
