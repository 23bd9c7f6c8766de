package fwtest_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// root is the repository root, where tools/ and the documents live.
var root = func() string {
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return r
}()

var (
	npmOnce sync.Once
	npmErr  error
	npmOut  []byte
)

// nodeTools makes sure the pinned Node tools under tools/ are installed
// (npm ci from the committed lock file, once per test binary, as
// tools/lint.sh does) and returns the directory of their executables.
func nodeTools(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("these tests need Node.js 20+ with npm (Debian: apt-get install nodejs npm)")
	}
	bin := filepath.Join(root, "tools", "node_modules", ".bin")
	npmOnce.Do(func() {
		for _, tool := range []string{"prism", "openapi-typescript", "tsc"} {
			if _, err := os.Stat(filepath.Join(bin, tool)); err != nil {
				cmd := exec.Command("npm", "ci", "--prefix", filepath.Join(root, "tools"), "--no-audit", "--no-fund", "--loglevel=error")
				npmOut, npmErr = cmd.CombinedOutput()
				return
			}
		}
	})
	if npmErr != nil {
		t.Fatalf("npm ci in tools/: %v\n%s", npmErr, npmOut)
	}
	return bin
}

// run runs a command with a deadline and fails t with its output when it
// does not exit 0.
func run(t *testing.T, timeout time.Duration, env []string, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), args, err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes()
}
