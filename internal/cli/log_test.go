package cli

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/logmonitor/logtest"
)

func logLeaves(from, n int) [][]byte {
	var out [][]byte
	for i := from; i < from+n; i++ {
		out = append(out, logtest.HeadLeaf(fmt.Sprintf("agr-%d", i%3), int64(i+1), logtest.ChainHead(fmt.Sprint(i))))
	}
	return out
}

// TestLogMonitor runs the command as cron would: exit 0 while the log
// grows honestly, 1 naming the first bad index once it was rewritten, 1
// for a split view seen through another client's checkpoint, 3 when the
// server is gone.
func TestLogMonitor(t *testing.T) {
	t.Parallel()
	signer := logtest.NewSigner(t)
	a, b := logtest.New(t, signer), logtest.New(t, signer)
	a.Append(logLeaves(0, 300)...)
	b.Append(logLeaves(0, 300)...)
	state := filepath.Join(t.TempDir(), "monitor.json")
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	witness := a.Cosign("witness.example", priv)
	if code, out := runCLI("log", "monitor", a.URL(), "--state", state, "--witness", witness); code != 0 || !strings.HasSuffix(out, "\nok\n") ||
		!strings.Contains(out, "1 of the 1 named witnesses cosigned (witness.example)") {
		t.Fatalf("first run: %d\n%s", code, out)
	}
	a.Append(logLeaves(300, 10)...)
	if code, out := runCLI("log", "monitor", a.URL(), "--state", state, "--witness", witness, "--witnesses", "0"); code != 0 || !strings.Contains(out, "300 → 310 leaves") {
		t.Fatalf("second run: %d\n%s", code, out)
	}
	if code, out := runCLI("log", "monitor", a.URL(), "--state", state, "--witness", witness); code != 1 || !strings.Contains(out, "FAIL cosignatures") {
		t.Fatalf("a checkpoint the witness did not cosign: %d\n%s", code, out)
	}

	// B shows another history of the same size.
	b.Append(logLeaves(400, 10)...)
	other := write(t, "b.checkpoint", string(b.Checkpoint()))
	code, out := runCLI("log", "monitor", a.URL(), "--state", state, "--checkpoint", other)
	if code != 1 || !strings.Contains(out, "split view") || !strings.Contains(out, "consensus: the log does not check out: checkpoint "+other+" failed") {
		t.Fatalf("split view: %d\n%s", code, out)
	}

	a.Rewrite(7, logtest.HeadLeaf("agr-x", 1, logtest.ChainHead("x")))
	a.Append(logLeaves(310, 1)...)
	if code, out := runCLI("log", "monitor", a.URL(), "--state", state); code != 1 || !strings.Contains(out, "first bad index 7:") || !strings.Contains(out, "\nFAIL: consistency\n") {
		t.Fatalf("rewritten log: %d\n%s", code, out)
	}

	if code, out := runCLI("log", "monitor", "http://127.0.0.1:1", "--state", filepath.Join(t.TempDir(), "s.json"), "--timeout", "2s"); code != 3 || !strings.Contains(out, "UNCHECKED: monitor") {
		t.Fatalf("no server: %d\n%s", code, out)
	}
	if code, _ := runCLI("log", "monitor", a.URL()); code != 2 {
		t.Fatalf("no --state: %d", code)
	}
	if code, out := runCLI("log", "monitor", a.URL(), "--state", state, "--rooms", write(t, "rooms.txt", "not a room line\n")); code != 3 {
		t.Fatalf("bad rooms file: %d\n%s", code, out)
	}
}
