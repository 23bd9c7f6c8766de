package record

import (
	"slices"
	"strings"
	"testing"
)

// scenarioNamed returns the scenario of the vectors with that name.
func scenarioNamed(t testing.TB, name string) scenario {
	t.Helper()
	for _, sc := range scenarios {
		if sc.name == name {
			return sc
		}
	}
	t.Fatalf("no scenario %s", name)
	return scenario{}
}

// TestVerifyRefusesRepeatedSignature: a participant signs one event; a
// record in which its signature appears on a second event (a command
// posted again under a new Idempotency-Key by a token thief, or copied by
// the service) fails the participant-signature check, although the copy
// verifies over its command.
func TestVerifyRefusesRepeatedSignature(t *testing.T) {
	t.Parallel()
	r, _, _ := scenarioNamed(t, "reached-mixed").signed(t)
	r.Events = repeatEvent(r.Events, 0, 1, "")
	b := reseal(t, r)
	rep := Verify(b, Options{Keys: testKeys(serviceKey)})
	if got := rep.FailedChecks(); !slices.Equal(got, []string{CheckParticipantSignature}) {
		var out strings.Builder
		_ = rep.Write(&out)
		t.Fatalf("failed %v, want [%s]\n%s", got, CheckParticipantSignature, out.String())
	}
	for _, f := range rep.Failed {
		if !strings.Contains(f.Message, "repeat") {
			t.Errorf("the failure does not say the signature repeats: %s", f.Message)
		}
	}
}
