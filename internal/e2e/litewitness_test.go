package e2e

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/proctest"
	"github.com/consensus-md/consensus/internal/translog"
)

// litewitness is a running filippo.io/torchwood litewitness: an
// independently written C2SP tlog-witness, keeping its state in SQLite
// and signing through an ssh-agent of its own, as its README says to run
// it.
type litewitness struct {
	Name string
	URL  string
	// Key is its tlog-cosignature/v1 verifier key (name+hash+base64).
	Key string
	Pub ed25519.PublicKey
	db  string
	bin string
}

var witnessBins = sync.OnceValues(func() (string, error) {
	root, err := proctest.ModuleRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "litewitness-bin-")
	if err != nil {
		return "", err
	}
	// The versions are go.mod's tool lines (filippo.io/torchwood v0.6.1).
	cmd := exec.Command("go", "build", "-o", dir+"/", "filippo.io/torchwood/cmd/litewitness", "filippo.io/torchwood/cmd/witnessctl")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build litewitness: %v\n%s", err, out)
	}
	return dir, nil
})

// startLitewitness builds litewitness and witnessctl, makes a throwaway
// Ed25519 key with ssh-keygen, serves it from a private ssh-agent, and
// starts litewitness on a loopback port. The log is registered with
// addLog before the service first asks.
func startLitewitness(t *testing.T, name string) *litewitness {
	t.Helper()
	for _, tool := range []string{"ssh-agent", "ssh-add", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the witness test needs %s (Debian package openssh-client): %v", tool, err)
		}
	}
	bins, err := witnessBins()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "witness")
	run(t, nil, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "litewitness test key", "-f", keyFile)
	pub := sshEd25519Public(t, keyFile+".pub")
	fp := strings.Fields(run(t, nil, "ssh-keygen", "-l", "-E", "sha256", "-f", keyFile+".pub"))
	if len(fp) < 2 || !strings.HasPrefix(fp[1], "SHA256:") {
		t.Fatalf("ssh-keygen -l: %q", fp)
	}
	sock := filepath.Join(dir, "agent.sock")
	agent := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agent.Process.Kill(); _ = agent.Wait() })
	waitFor(t, func() bool { _, err := os.Stat(sock); return err == nil })
	run(t, []string{"SSH_AUTH_SOCK=" + sock}, "ssh-add", "-q", keyFile)

	w := &litewitness{Name: name, Pub: pub, db: filepath.Join(dir, "witness.db"), bin: bins,
		Key: translog.CosignatureVerifierKey(name, pub)}
	addr := freeAddr(t)
	w.URL = "http://" + addr
	lw := exec.Command(filepath.Join(bins, "litewitness"), "-name", name, "-db", w.db, "-ssh-agent", sock, "-key", fp[1], "-listen", addr)
	out := &strings.Builder{}
	lw.Stdout, lw.Stderr = out, out
	if err := lw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = lw.Process.Kill()
		_ = lw.Wait()
		if t.Failed() {
			t.Logf("litewitness output:\n%s", out)
		}
	})
	waitFor(t, func() bool {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return w
}

// addLog registers a log (its origin and its verifier key) with witnessctl.
func (w *litewitness) addLog(t *testing.T, origin, vkey string) {
	t.Helper()
	run(t, nil, filepath.Join(w.bin, "witnessctl"), "add-log", "-db", w.db, "-origin", origin)
	run(t, nil, filepath.Join(w.bin, "witnessctl"), "add-key", "-db", w.db, "-origin", origin, "-key", vkey)
}

func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// sshEd25519Public reads an OpenSSH ssh-ed25519 public key file: its
// base64 part is the wire form, a length-prefixed name then the key.
func sshEd25519Public(t *testing.T, file string) ed25519.PublicKey {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 || f[0] != "ssh-ed25519" {
		t.Fatalf("%s is not an ssh-ed25519 key", file)
	}
	wire, err := base64.StdEncoding.DecodeString(f[1])
	if err != nil {
		t.Fatal(err)
	}
	var parts [][]byte
	for len(wire) >= 4 {
		n := binary.BigEndian.Uint32(wire)
		if int(n) > len(wire)-4 {
			break
		}
		parts = append(parts, wire[4:4+n])
		wire = wire[4+n:]
	}
	if len(parts) != 2 || string(parts[0]) != "ssh-ed25519" || len(parts[1]) != ed25519.PublicKeySize {
		t.Fatal(errors.New("malformed ssh-ed25519 wire key"))
	}
	return ed25519.PublicKey(parts[1])
}
