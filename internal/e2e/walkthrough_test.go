package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestReadmeWalkthrough runs the bash blocks of the README's walkthrough,
// unchanged, in a scratch directory laid out like a checkout after
// `make run`: bin/consensus, examples/, .data/mail and .data/operator-token.
func TestReadmeWalkthrough(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "jq", "curl", "sed", "grep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the walkthrough needs %s", tool)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile(`(?s)<!-- walkthrough:start -->(.*)<!-- walkthrough:end -->`).FindSubmatch(readme)
	if section == nil {
		t.Fatal("README has no walkthrough section")
	}
	blocks := regexp.MustCompile("(?s)```bash\n(.*?)```").FindAllSubmatch(section[1], -1)
	if len(blocks) < 6 {
		t.Fatalf("only %d bash blocks in the walkthrough", len(blocks))
	}
	var script bytes.Buffer
	script.WriteString("set -euo pipefail\n")
	for _, b := range blocks {
		script.Write(b[1])
	}

	s := startServer(t)
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "bin")+"/", "./cmd/consensus")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	abs, _ := filepath.Abs("../../examples")
	must(t, os.Symlink(abs, filepath.Join(dir, "examples")))
	must(t, os.MkdirAll(filepath.Join(dir, ".data"), 0o700))
	must(t, os.Symlink(s.Maildir, filepath.Join(dir, ".data", "mail")))
	must(t, os.WriteFile(filepath.Join(dir, ".data", "operator-token"), []byte(operatorToken+"\n"), 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CONSENSUS_URL="+s.Origin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("walkthrough failed: %v\n%s", err, out)
	}
	for _, want := range []string{`"status": "reached"`, "Content-Digest ok", "X-Consensus-SHA256 ok", "revisionDigest", "# CONSENSUS.md: Ship release 2.4 on Friday"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("walkthrough output lacks %q:\n%s", want, out)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
