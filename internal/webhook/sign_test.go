package webhook

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"strconv"
	"testing"
	"time"
)

func TestSignVerify(t *testing.T) {
	t.Parallel()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"type":"room.event"}`)
	sig := Sign(priv, "msg_1", now.Unix(), body)
	ts := strconv.FormatInt(now.Unix(), 10)
	if err := Verify([]ed25519.PublicKey{other, pub}, "msg_1", ts, "v1,abc "+sig, body, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		id, ts, sig string
		body        []byte
		at          time.Time
		want        error
	}{
		"other body":   {"msg_1", ts, sig, []byte(`{}`), now, ErrNoSignature},
		"other id":     {"msg_2", ts, sig, body, now, ErrNoSignature},
		"old":          {"msg_1", ts, sig, body, now.Add(6 * time.Minute), ErrTimestamp},
		"no timestamp": {"msg_1", "", sig, body, now, ErrTimestamp},
		"v1 only":      {"msg_1", ts, "v1," + sig[4:], body, now, ErrNoSignature},
	} {
		if err := Verify([]ed25519.PublicKey{pub}, c.id, c.ts, c.sig, c.body, c.at); !errors.Is(err, c.want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestScheduleIsBounded(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	var total time.Duration
	for attempt := 1; ; attempt++ {
		next, ok := Next(attempt, now)
		if !ok {
			if attempt != 7 {
				t.Fatalf("the schedule ends after %d attempts", attempt)
			}
			break
		}
		total += next.Sub(now)
	}
	if total != 5*time.Second+5*time.Minute+30*time.Minute+17*time.Hour {
		t.Fatalf("total %v", total)
	}
}
