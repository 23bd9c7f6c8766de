package fwtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// modulePath is the service module's path, which names the repository
// root from any module nested in it (the generated Go client's included).
const modulePath = "github.com/consensus-md/consensus"

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

// Root is the repository root, where tools/, openapi-agent.json and the
// documents live: the nearest directory above the working directory whose
// go.mod declares the service module.
func Root(tb testing.TB) string {
	tb.Helper()
	rootOnce.Do(func() { rootDir, rootErr = findRoot() })
	if rootErr != nil {
		tb.Fatal(rootErr)
	}
	return rootDir
}

func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if strings.TrimSpace(sc.Text()) == "module "+modulePath {
					f.Close()
					return dir, nil
				}
			}
			f.Close()
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("fwtest: no go.mod declaring %s above the working directory", modulePath)
		}
		dir = parent
	}
}

var (
	npmOnce sync.Once
	npmErr  error
	npmOut  []byte
)

// NodeTools makes sure the pinned Node tools under tools/ are installed
// (npm ci from the committed lock file, once per test binary, when
// node_modules is missing or older than the lock file, as tools/lint.sh
// does) and returns the directory of their executables.
func NodeTools(tb testing.TB) string {
	tb.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		tb.Fatal("these tests need Node.js 20+ with npm (Debian: apt-get install nodejs npm)")
	}
	root := Root(tb)
	bin := filepath.Join(root, "tools", "node_modules", ".bin")
	npmOnce.Do(func() { npmOut, npmErr = installTools(filepath.Join(root, "tools")) })
	if npmErr != nil {
		tb.Fatalf("npm ci in tools/: %v\n%s", npmErr, npmOut)
	}
	return bin
}

// installTools runs npm ci in dir when node_modules is missing or older
// than the lock file. Test binaries of several packages run at once, so
// the install is serialized across processes by a lock directory (its
// creation is atomic); one left by a killed process is taken over after
// ten minutes.
func installTools(dir string) ([]byte, error) {
	current := func() (bool, error) {
		lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
		if err != nil {
			return false, err
		}
		installed, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
		return err == nil && !lock.ModTime().After(installed.ModTime()), nil
	}
	if ok, err := current(); ok || err != nil {
		return nil, err
	}
	mutex := filepath.Join(dir, ".npm-ci.lock")
	deadline := time.Now().Add(15 * time.Minute)
	for os.Mkdir(mutex, 0o700) != nil {
		if fi, err := os.Stat(mutex); err == nil && time.Since(fi.ModTime()) > 10*time.Minute {
			os.Remove(mutex)
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("another npm ci in %s holds %s", dir, mutex)
		}
		time.Sleep(500 * time.Millisecond)
	}
	defer os.Remove(mutex)
	if ok, err := current(); ok || err != nil {
		return nil, err
	}
	return exec.Command("npm", "ci", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error").CombinedOutput()
}

// Run runs a command in the repository root with a deadline and env added
// to the test's environment, and fails tb with its output when it does not
// exit 0. It returns the standard output.
func Run(tb testing.TB, timeout time.Duration, env []string, name string, args ...string) []byte {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = Root(tb)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("%s %v: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), args, err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes()
}
