package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
)

// TestSignedBytesAreCanonical: the served bytes are the canonical form of
// the signed record, and a reformatted copy verifies just the same.
func TestSignedBytesAreCanonical(t *testing.T) {
	t.Parallel()
	_, b, artifact := scenarios[0].signed(t)
	c, err := canon.Transform(b)
	if err != nil || !bytes.Equal(c, b) {
		t.Fatalf("record bytes are not canonical: %v", err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, b, "", "  "); err != nil {
		t.Fatal(err)
	}
	if rep := Verify(pretty.Bytes(), Options{Artifact: artifact, Keys: testKeys(serviceKey)}); !rep.OK() || !rep.Authenticated() {
		t.Fatalf("indented copy: %+v", rep.Failed)
	}
	if bytes.Contains(b, []byte("inbox")) || bytes.Contains(b, []byte("@")) {
		t.Fatal("the record mentions an inbox")
	}
}

// TestBuildRefusesWhatItCannotAssemble: Build refuses inputs it cannot
// make a record of (the service verifies the signed record as a whole
// before storing it: e2e TestRecordRefusedUnlessItVerifies).
func TestBuildRefusesWhatItCannotAssemble(t *testing.T) {
	t.Parallel()
	cases := map[string]func(in *Input){
		"pending outcome":      func(in *Input) { in.Outcome = room.Outcome{Status: room.StatusPending} },
		"changed body":         func(in *Input) { in.Events[0].Body = "changed" },
		"broken link":          func(in *Input) { in.Events[1].Prev = canon.ZeroHash },
		"changed time":         func(in *Input) { in.Events[1].CreatedAt = in.Events[1].CreatedAt.Add(time.Microsecond) },
		"participant unknown":  func(in *Input) { in.Events[0].ParticipantID = fixedID("stranger") },
		"other revision":       func(in *Input) { in.Events[0].Revision = 2 },
		"slot missing":         func(in *Input) { in.Slots = in.Slots[1:] },
		"canonical not object": func(in *Input) { in.Revisions[0].Canonical = []byte(`[]`) },
		"no revision":          func(in *Input) { in.Revisions = nil },
		"revision misnumbered": func(in *Input) { in.Revisions[0].Number = 2 },
	}
	for name, mutate := range cases {
		in, _ := scenarios[0].build(t)
		in.Events = append([]StoredEvent(nil), in.Events...)
		in.Revisions = append([]LockedRevision(nil), in.Revisions...)
		mutate(&in)
		if _, err := Build(in); err == nil {
			t.Errorf("%s: built", name)
		}
	}
}

// TestWithoutKeysNotAuthenticated: without a JWKS nothing fails, but the
// report never claims the record is authentic.
func TestWithoutKeysNotAuthenticated(t *testing.T) {
	t.Parallel()
	_, b, _ := scenarios[1].signed(t)
	rep := Verify(b, Options{})
	var out strings.Builder
	_ = rep.Write(&out)
	if !rep.OK() || rep.Authenticated() || !strings.Contains(out.String(), "NOT AUTHENTICATED") || !strings.Contains(out.String(), "skip service-signature") {
		t.Fatal(out.String())
	}
}

// TestNotJSON: unreadable input fails the format check alone.
func TestNotJSON(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "{", "[]", `{"schema":1}`, "null"} {
		if got := Verify([]byte(in), Options{}).FailedChecks(); len(got) != 1 || got[0] != CheckFormat {
			t.Errorf("%q: %v", in, got)
		}
	}
}

// big is a reached room of n participants, all keyed and required, each
// posting perEach comments (the same text each time, signed over
// room-command/v2, so each under its own key) before agreeing.
func big(n, perEach int) scenario {
	sc := scenario{name: fmt.Sprintf("big-%d-%d", n, perEach), issuedAfter: 2 * day, v2: true}
	for i := 0; i < n; i++ {
		sc.members = append(sc.members, member{name: fmt.Sprintf("Agent %02d", i), kind: room.KindAgent, required: true, key: fmt.Sprintf("big %d", i)})
	}
	at := 0
	for j := 0; j < perEach; j++ {
		for i := 0; i < n; i++ {
			at++
			sc.acts = append(sc.acts, act{i, room.ActionComment, strings.Repeat("A considered comment. ", 9), at, nil})
		}
	}
	for i := 0; i < n; i++ {
		at++
		sc.acts = append(sc.acts, act{i, room.ActionAgree, "", at, nil})
	}
	return sc
}

// TestRecordSize logs the record's size for the performance notes:
// 3 and 50 participants deciding without comments, and (RECORD_TIMING=1)
// 50 participants with 5,000 events.
func TestRecordSize(t *testing.T) {
	t.Parallel()
	sizes := []struct{ n, per int }{{3, 0}, {50, 0}, {3, 10}}
	if os.Getenv("RECORD_TIMING") != "" {
		sizes = append(sizes, struct{ n, per int }{50, 99})
	}
	for _, c := range sizes {
		_, b, _ := big(c.n, c.per).signed(t)
		rep := Verify(b, Options{Keys: testKeys(serviceKey)})
		if !rep.OK() || !rep.Authenticated() {
			t.Fatalf("%d participants: %v", c.n, rep.Failed)
		}
		t.Logf("%d participants, %d events: %d bytes", c.n, c.n*(c.per+1), len(b))
	}
}

// BenchmarkVerify5000 verifies a record of 5,000 signed events (50
// participants, 100 events each): go test -run '^$' -bench Verify5000 ./internal/record
func BenchmarkVerify5000(b *testing.B) {
	_, raw, _ := big(50, 99).signed(b)
	keys := testKeys(serviceKey)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if rep := Verify(raw, Options{Keys: keys}); !rep.OK() {
			b.Fatal(rep.Failed)
		}
	}
}

// TestVerify5000Node times the Node verifier on the same record when
// RECORD_TIMING is set (it writes the record to a temporary file).
func TestVerify5000Node(t *testing.T) {
	if os.Getenv("RECORD_TIMING") == "" {
		t.Skip("set RECORD_TIMING=1 to time both verifiers on 5,000 events")
	}
	_, raw, _ := big(50, 99).signed(t)
	dir := t.TempDir()
	keys, _ := json.Marshal(testKeys(serviceKey))
	if err := os.WriteFile(dir+"/r.json", raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/k.json", keys, 0o600); err != nil {
		t.Fatal(err)
	}
	// CPU time, not wall time: on a shared machine the wall clock
	// measures the neighbours.
	before := cpuTime()
	start := time.Now()
	rep := Verify(raw, Options{Keys: testKeys(serviceKey)})
	t.Logf("Go: %v CPU (%v wall) for %d bytes, verified %t", cpuTime()-before, time.Since(start), len(raw), rep.OK() && rep.Authenticated())
	cmd := exec.Command("node", "../../tools/verify-record.mjs", dir+"/r.json", "--keys", dir+"/k.json")
	start = time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("Node: %v CPU (%v wall, process start included): %s", cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime(), time.Since(start), bytes.TrimSpace(out[bytes.LastIndex(out[:len(out)-1], []byte("\n"))+1:]))
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
