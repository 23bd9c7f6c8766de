package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// Replace stops the replica gracefully (SIGTERM, as a rolling update
// does) and starts bin in its place, on its address.
func (r *Replica) Replace(tb testing.TB, bin string) {
	tb.Helper()
	r.Stop(tb)
	r.mu.Lock()
	r.bin = bin
	r.mu.Unlock()
	r.start(tb)
}

// released matches a released version's heading in CHANGELOG.md.
var released = regexp.MustCompile(`(?m)^## (v\d+\.\d+\.\d+) — commit ([0-9a-f]{7,40})\s*$`)

// PreviousRelease returns the newest released version CHANGELOG.md names
// and its commit.
func PreviousRelease(tb testing.TB) (version, commit string) {
	tb.Helper()
	root, err := ModuleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		tb.Fatalf("proctest: %v", err)
	}
	m := released.FindSubmatch(b)
	if m == nil {
		tb.Fatal("proctest: CHANGELOG.md names no released version (## vX.Y.Z — commit abc1234)")
	}
	return string(m[1]), string(m[2])
}

// BuildAt builds consensusd from the tree of commit (git archive into a
// temporary directory, then go build there) and returns its path. The
// checkout must hold the commit's history.
func BuildAt(tb testing.TB, commit string) string {
	tb.Helper()
	root, err := ModuleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	archive := exec.Command("sh", "-c", fmt.Sprintf("git -C %q archive --format=tar %s | tar -x -C %q", root, commit, dir))
	if out, err := archive.CombinedOutput(); err != nil {
		tb.Fatalf("proctest: git archive %s: %v\n%s", commit, err, out)
	}
	bin := filepath.Join(dir, "consensusd-"+commit)
	build := exec.Command("go", "build", "-o", bin, "./cmd/consensusd")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("proctest: go build at %s: %v\n%s", commit, err, out)
	}
	return bin
}
