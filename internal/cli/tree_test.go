package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// buildBinaries builds consensus and consensusd into a temporary directory
// the way `make build` does, so --version reports real build information.
// The revision is "" when the module root is not a git clone (Go stamps no
// revision in a git worktree or an unpacked archive). Not proctest.Binary:
// this needs both binaries, stamped with VCS information as make build does.
func buildBinaries(t *testing.T) (dir, revision string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	vcs := "-buildvcs=false"
	if fi, err := os.Stat(filepath.Join(root, ".git")); err == nil && fi.IsDir() {
		if out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output(); err == nil {
			revision, vcs = strings.TrimSpace(string(out)), "-buildvcs=true"
		}
	}
	dir = t.TempDir()
	build := exec.Command("go", "build", vcs, "-o", dir+string(filepath.Separator), "./cmd/consensus", "./cmd/consensusd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir, revision
}

// TestCommandTrees walks every command of both binaries, found through
// their own help, in an empty directory with an empty environment (no
// credential, state, server or database): --help and -h answer on stdout
// with exit 0 and name the command; an unknown flag is exit 2 with that
// command's usage; --version and version name the revision and Go version.
func TestCommandTrees(t *testing.T) {
	t.Parallel()
	bin, revision := buildBinaries(t)
	work := t.TempDir()
	exe := func(name string, args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir, cmd.Env = work, []string{}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
	for _, name := range []string{"consensus", "consensusd"} {
		walked := 0
		queue := [][]string{{}}
		for len(queue) > 0 {
			path := queue[0]
			queue = queue[1:]
			walked++
			full := strings.Join(append([]string{name}, path...), " ")
			code, help, stderr := exe(name, append(path, "--help")...)
			if code != 0 || stderr != "" || !strings.Contains(help, "Usage:\n  "+full) {
				t.Errorf("%s --help: exit %d, stderr %q, help does not name the command:\n%s", full, code, stderr, help)
				continue
			}
			if code, short, _ := exe(name, append(path, "-h")...); code != 0 || short != help {
				t.Errorf("%s -h: exit %d, differs from --help", full, code)
			}
			if !strings.Contains(help, "Examples:\n") || !strings.Contains(help, "-h, --help") {
				t.Errorf("%s --help lacks an example or its flags:\n%s", full, help)
			}
			code, stdout, stderr := exe(name, append(path, "--no-such-flag")...)
			if code != 2 || stdout != "" || !strings.HasPrefix(stderr, full+": unknown flag --no-such-flag\n") || !strings.Contains(stderr, "Usage:\n  "+full) {
				t.Errorf("%s --no-such-flag: exit %d, stdout %q, stderr:\n%s", full, code, stdout, stderr)
			}
			for _, sub := range subcommands(help) {
				queue = append(queue, append(append([]string{}, path...), sub))
			}
		}
		if walked < 5 {
			t.Errorf("%s: walked only %d commands", name, walked)
		}
		for _, args := range [][]string{{"--version"}, {"version"}} {
			code, stdout, stderr := exe(name, args...)
			if code != 0 || stderr != "" || !strings.HasPrefix(stdout, name+" ") || !strings.Contains(stdout, runtime.Version()) || !strings.Contains(stdout, "revision "+revision) {
				t.Errorf("%s %v: exit %d, stderr %q, stdout lacks the revision %q or %s:\n%s", name, args, code, stderr, revision, runtime.Version(), stdout)
			}
		}
		if revision == "" {
			t.Logf("%s: not a git clone, so the build has no revision to check", name)
		}
	}
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Errorf("help wrote into the working directory: %v", entries)
	}
}

// subcommands lists the names under "Commands:" in a help text.
func subcommands(help string) []string {
	_, list, ok := strings.Cut(help, "\nCommands:\n")
	if !ok {
		return nil
	}
	var names []string
	for _, line := range strings.Split(list, "\n") {
		if !strings.HasPrefix(line, "  ") {
			break
		}
		names = append(names, strings.Fields(line)[0])
	}
	return names
}
