package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/consensus-md/consensus/internal/translog"
)

// The transparency log's witness: filippo.io/torchwood's litewitness (an
// independently written C2SP tlog-witness; go.mod's tool lines pin it),
// signing with a throwaway Ed25519 key served by an ssh-agent of its own,
// as its README says to run it. consensusd is started with it as its one
// witness, so every load runs with the log pushing checkpoints to it.

// witnessName is the witness's name (its cosignature lines carry it).
const witnessName = "consensus-bench.localhost/witness"

// benchLogOrigin is the origin line of the bench service's checkpoints.
const benchLogOrigin = "consensus-bench.localhost/log"

// witnessTools are the programs starting the witness needs besides Go.
var witnessTools = []string{"ssh-keygen", "ssh-agent", "ssh-add"}

// findWitnessTools reports the first missing one, naming its package.
func findWitnessTools() error {
	for _, tool := range witnessTools {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found: the log's witness needs it (Debian package openssh-client: apt-get install openssh-client)", tool)
		}
	}
	return nil
}

type benchWitness struct {
	url     string
	vkey    string // its tlog-cosignature/v1 verifier key, as litewitness prints it
	dir     string
	bin     string // directory holding litewitness and witnessctl
	logPath string
	agent   *exec.Cmd
	lw      *exec.Cmd
}

// benchLog is the log's settings for consensusd: its key, origin and the
// witness, as environment lines.
type benchLog struct {
	seed []byte
	vkey string // the log's note verifier key
	env  []string
}

func newBenchLog(w *benchWitness) (*benchLog, error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return nil, err
	}
	signer, err := translog.NewSigner(benchLogOrigin, ed25519.NewKeyFromSeed(seed))
	if err != nil {
		return nil, err
	}
	l := &benchLog{seed: seed, vkey: signer.VerifierKey()}
	l.env = []string{
		"CONSENSUS_LOG_KEY=" + hex.EncodeToString(seed),
		"CONSENSUS_LOG_ORIGIN=" + benchLogOrigin,
		"CONSENSUS_LOG_WITNESSES=" + w.vkey + " " + w.url,
	}
	return l, nil
}

var vkeyRE = regexp.MustCompile(`vkey=(\S+)`)

// startWitness builds litewitness and witnessctl, makes the key with
// ssh-keygen, serves it from a private ssh-agent and starts litewitness on
// a loopback port, all under WORK/witness (recreated).
func startWitness(ctx context.Context, cfg config) (*benchWitness, error) {
	w := &benchWitness{dir: filepath.Join(cfg.WorkDir, "witness"), bin: filepath.Join(cfg.WorkDir, "bin")}
	if err := os.RemoveAll(w.dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		return nil, err
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", w.bin+"/", "filippo.io/torchwood/cmd/litewitness", "filippo.io/torchwood/cmd/witnessctl")
	build.Dir = cfg.Root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build litewitness: %w\n%s", err, out)
	}
	keyFile := filepath.Join(w.dir, "witness")
	if _, err := runTool(ctx, nil, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "consensus-bench witness", "-f", keyFile); err != nil {
		return nil, err
	}
	out, err := runTool(ctx, nil, "ssh-keygen", "-l", "-E", "sha256", "-f", keyFile+".pub")
	if err != nil {
		return nil, err
	}
	fp := strings.Fields(out)
	if len(fp) < 2 || !strings.HasPrefix(fp[1], "SHA256:") {
		return nil, fmt.Errorf("ssh-keygen -l: unexpected output %q", out)
	}
	sock := filepath.Join(w.dir, "agent.sock")
	w.agent = exec.Command("ssh-agent", "-D", "-a", sock)
	w.agent.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := w.agent.Start(); err != nil {
		return nil, fmt.Errorf("ssh-agent: %w", err)
	}
	if err := waitUntil(ctx, 10*time.Second, func() bool { _, err := os.Stat(sock); return err == nil }); err != nil {
		w.stop()
		return nil, fmt.Errorf("ssh-agent made no socket: %w", err)
	}
	if _, err := runTool(ctx, []string{"SSH_AUTH_SOCK=" + sock}, "ssh-add", "-q", keyFile); err != nil {
		w.stop()
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		w.stop()
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	w.url = "http://" + addr
	w.logPath = filepath.Join(w.dir, "litewitness.log")
	logf, err := os.Create(w.logPath)
	if err != nil {
		w.stop()
		return nil, err
	}
	defer logf.Close()
	w.lw = exec.Command(filepath.Join(w.bin, "litewitness"), "-name", witnessName, "-db", filepath.Join(w.dir, "witness.db"),
		"-ssh-agent", sock, "-key", fp[1], "-listen", addr)
	w.lw.Stdout, w.lw.Stderr = logf, logf
	w.lw.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := w.lw.Start(); err != nil {
		w.stop()
		return nil, fmt.Errorf("litewitness: %w", err)
	}
	// litewitness logs its verifier key ("verifier key" vkey=…) before it listens.
	err = waitUntil(ctx, 30*time.Second, func() bool {
		b, _ := os.ReadFile(w.logPath)
		if m := vkeyRE.FindSubmatch(b); m != nil {
			w.vkey = string(m[1])
		}
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil && w.vkey != ""
	})
	if err != nil {
		w.stop()
		return nil, fmt.Errorf("litewitness did not start (its log: %s): %w", w.logPath, err)
	}
	if _, err := translog.NewVerifier(w.vkey); err != nil {
		w.stop()
		return nil, fmt.Errorf("litewitness's verifier key %q: %w", w.vkey, err)
	}
	return w, nil
}

// addLog registers the log's origin and key with witnessctl, as an
// operator of the witness would before the log first asks it.
func (w *benchWitness) addLog(ctx context.Context, origin, vkey string) error {
	db := filepath.Join(w.dir, "witness.db")
	if _, err := runTool(ctx, nil, filepath.Join(w.bin, "witnessctl"), "add-log", "-db", db, "-origin", origin); err != nil {
		return err
	}
	_, err := runTool(ctx, nil, filepath.Join(w.bin, "witnessctl"), "add-key", "-db", db, "-origin", origin, "-key", vkey)
	return err
}

func (w *benchWitness) stop() {
	for _, c := range []*exec.Cmd{w.lw, w.agent} {
		if c != nil && c.Process != nil {
			_ = c.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = c.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = c.Process.Kill()
			}
		}
	}
}

func runTool(ctx context.Context, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %.500s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// waitUntil polls ok every 50 ms until it holds, ctx ends or limit passes.
func waitUntil(ctx context.Context, limit time.Duration, ok func() bool) error {
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			return errors.New("timed out after " + limit.String())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}
