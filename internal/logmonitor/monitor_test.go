package logmonitor

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/logmonitor/logtest"
)

// leaves are n head leaves from index from on: seven agreements whose
// heads move forward.
func leaves(from, n int) [][]byte {
	var out [][]byte
	for i := from; i < from+n; i++ {
		out = append(out, logtest.HeadLeaf(fmt.Sprintf("agr-%d", i%7), int64(i+1), logtest.ChainHead(fmt.Sprint(i))))
	}
	return out
}

func config(l *logtest.Log, state string) Config {
	return Config{URL: l.URL(), StatePath: state, Grace: 10 * time.Second, Client: &http.Client{Timeout: 10 * time.Second}}
}

func statePath(t *testing.T) string { return filepath.Join(t.TempDir(), "monitor.json") }

// mustRun runs the monitor and fails the test on an error.
func mustRun(t *testing.T, cfg Config) *Report {
	t.Helper()
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, text(rep))
	}
	return rep
}

func text(rep *Report) string {
	var b strings.Builder
	_ = rep.Write(&b)
	return b.String()
}

// wantOK fails unless every check passed.
func wantOK(t *testing.T, rep *Report) {
	t.Helper()
	if out := text(rep); !strings.HasSuffix(out, "\nok\n") {
		t.Fatalf("want ok:\n%s", out)
	}
}

// wantFail fails unless the check name failed with a detail holding each
// of parts.
func wantFail(t *testing.T, rep *Report, name string, parts ...string) {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Name == name && c.Status == Fail {
			for _, p := range parts {
				if !strings.Contains(c.Detail, p) {
					t.Fatalf("%s failed without %q:\n%s", name, p, text(rep))
				}
			}
			return
		}
	}
	t.Fatalf("want %s to fail:\n%s", name, text(rep))
}

func TestMonitorFollowsGrowth(t *testing.T) {
	t.Parallel()
	l := logtest.New(t, logtest.NewSigner(t))
	state := statePath(t)
	l.Append(leaves(0, 3)...)
	rep := mustRun(t, config(l, state))
	wantOK(t, rep)
	if out := text(rep); !strings.Contains(out, "trust on first use") || !strings.Contains(out, "0 → 3 leaves") {
		t.Fatalf("first run:\n%s", out)
	}
	size := 3
	for _, n := range []int{300, 1, 0, 600} { // across tile boundaries, and not at all
		l.Append(leaves(size, n)...)
		size += n
		rep = mustRun(t, config(l, state))
		wantOK(t, rep)
		if out := text(rep); !strings.Contains(out, "pinned in the state file") {
			t.Fatalf("the key was not read from the state:\n%s", out)
		}
	}
	st := mustState(t, state)
	if st.Size != 904 || len(st.Heads) != 7 {
		t.Fatalf("state: size %d, %d heads", st.Size, len(st.Heads))
	}
	if fi, err := os.Stat(hashesPath(state)); err != nil || fi.Size() != 904*32 {
		t.Fatalf("hashes file: %v %v", fi, err)
	}
	if h := st.Heads["agr-0"]; h.Kind != "head" || h.Index%7 != 0 || h.Seq != h.Index+1 {
		t.Fatalf("head of agr-0: %+v", h)
	}
}

func mustState(t *testing.T, path string) *State {
	t.Helper()
	st, _, err := loadState(path)
	if err != nil || st == nil {
		t.Fatalf("state: %v", err)
	}
	return st
}

// The operator rebuilt the log with one leaf changed: the monitor names
// the first leaf whose hash differs, whether the log also grew or not, and
// keeps its state.
func TestMonitorNamesTheFirstRewrittenLeaf(t *testing.T) {
	t.Parallel()
	for _, grow := range []int{0, 5, 400} {
		t.Run(fmt.Sprint("grow ", grow), func(t *testing.T) {
			t.Parallel()
			l := logtest.New(t, logtest.NewSigner(t))
			state := statePath(t)
			l.Append(leaves(0, 600)...)
			wantOK(t, mustRun(t, config(l, state)))
			before, _ := os.ReadFile(state)
			l.Rewrite(300, logtest.HeadLeaf("agr-x", 1, logtest.ChainHead("forged")))
			l.Append(leaves(600, grow)...)
			rep := mustRun(t, config(l, state))
			wantFail(t, rep, "consistency", "first bad index 300")
			if after, _ := os.ReadFile(state); string(after) != string(before) {
				t.Fatal("the state moved on after an inconsistency")
			}
			wantFail(t, mustRun(t, config(l, state)), "consistency", "first bad index 300") // and again
		})
	}
}

func TestMonitorCatchesARollback(t *testing.T) {
	t.Parallel()
	l := logtest.New(t, logtest.NewSigner(t))
	state := statePath(t)
	l.Append(leaves(0, 10)...)
	wantOK(t, mustRun(t, config(l, state)))
	l.Truncate(8)
	wantFail(t, mustRun(t, config(l, state)), "consistency", "rollback", "8 leaves, fewer than the 10")
}

// Two servers of one log key show two histories of the same size: each
// side's monitor is content with its own, and fails once it sees the
// other's checkpoint.
func TestMonitorCatchesASplitView(t *testing.T) {
	t.Parallel()
	signer := logtest.NewSigner(t)
	a, b := logtest.New(t, signer), logtest.New(t, signer)
	common := leaves(0, 20)
	a.Append(common...)
	b.Append(common...)
	a.Append(logtest.HeadLeaf("agr-a", 1, logtest.ChainHead("a")))
	b.Append(logtest.HeadLeaf("agr-b", 1, logtest.ChainHead("b")))
	stateA, stateB := statePath(t), statePath(t)
	wantOK(t, mustRun(t, config(a, stateA)))
	wantOK(t, mustRun(t, config(b, stateB)))
	cfgA := config(a, stateA)
	cfgA.Seen = []Seen{{Name: "b.checkpoint", Signed: b.Checkpoint()}}
	wantFail(t, mustRun(t, cfgA), "checkpoint b.checkpoint", "split view", "two trees of 21 leaves")
	cfgB := config(b, stateB)
	cfgB.Seen = []Seen{{Name: "a.checkpoint", Signed: a.Checkpoint()}}
	wantFail(t, mustRun(t, cfgB), "checkpoint a.checkpoint", "split view")

	// Side A grows on: B's older, smaller checkpoint is no prefix of A's.
	old, oldA := b.Checkpoint(), a.Checkpoint()
	a.Append(leaves(21, 5)...)
	cfgA.Seen = []Seen{{Name: "b.checkpoint", Signed: old}}
	wantFail(t, mustRun(t, cfgA), "checkpoint b.checkpoint", "split view", "its root for 21 leaves")
	// Side B grows past A: A cannot prove B's larger tree from its tiles.
	b.Append(leaves(21, 10)...)
	cfgA.Seen = []Seen{{Name: "b.checkpoint", Signed: b.Checkpoint()}}
	rep := mustRun(t, cfgA)
	if got := rep.Unchecked(); len(got) != 1 {
		t.Fatalf("a larger checkpoint whose tiles the log does not serve:\n%s", text(rep))
	}
	// A's own checkpoints, older and current, are consistent with its view.
	cfgA.Seen = []Seen{{Name: "a-old", Signed: oldA}, {Name: "a-now", Signed: a.Checkpoint()}}
	wantOK(t, mustRun(t, cfgA))
}

func TestMonitorChecksEveryEntry(t *testing.T) {
	t.Parallel()
	t.Run("not canonical", func(t *testing.T) {
		t.Parallel()
		l := logtest.New(t, logtest.NewSigner(t))
		l.Append(leaves(0, 4)...)
		l.Append([]byte(`{"type": "consensus-log-leaf/v1"}`))
		wantFail(t, mustRun(t, config(l, statePath(t))), "entries", "leaf 4:", "canonical")
	})
	t.Run("not the logged entry", func(t *testing.T) {
		t.Parallel()
		l := logtest.New(t, logtest.NewSigner(t))
		state := statePath(t)
		l.Append(leaves(0, 260)...)
		wantOK(t, mustRun(t, config(l, state)))
		l.Append(leaves(260, 10)...)
		l.ServeEntry(263, leaves(900, 1)[0])
		wantFail(t, mustRun(t, config(l, state)), "entries", "leaf 263:", "does not hash")
	})
	t.Run("a room's head moves back", func(t *testing.T) {
		t.Parallel()
		l := logtest.New(t, logtest.NewSigner(t))
		l.Append(logtest.HeadLeaf("agr", 3, logtest.ChainHead("3")), logtest.HeadLeaf("agr", 3, logtest.ChainHead("other")))
		wantFail(t, mustRun(t, config(l, statePath(t))), "entries", "leaf 1:", "rewritten")
	})
}

// A run that died after writing the hashes and before the state leaves
// extra bytes, which the next run ignores; a damaged hashes file is
// unreadable, not evidence against the log.
func TestMonitorState(t *testing.T) {
	t.Parallel()
	l := logtest.New(t, logtest.NewSigner(t))
	state := statePath(t)
	l.Append(leaves(0, 40)...)
	wantOK(t, mustRun(t, config(l, state)))
	f, err := os.OpenFile(hashesPath(state), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write(make([]byte, 100))
	f.Close()
	l.Append(leaves(40, 3)...)
	wantOK(t, mustRun(t, config(l, state)))
	if fi, _ := os.Stat(hashesPath(state)); fi.Size() != 43*32 {
		t.Fatalf("hashes file of %d bytes", fi.Size())
	}

	good, _ := os.ReadFile(hashesPath(state))
	for name, damaged := range map[string][]byte{
		"short":   good[:42*32],
		"flipped": append(append([]byte{}, good[:5]...), append([]byte{good[5] ^ 1}, good[6:]...)...),
	} {
		if err := os.WriteFile(hashesPath(state), damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), config(l, state)); !IsUnavailable(err) || !strings.Contains(err.Error(), "hashes") {
			t.Errorf("%s hashes file: %v", name, err)
		}
	}
}
