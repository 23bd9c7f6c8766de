package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// consensusd under test: building it from the working tree, starting it
// with a clean environment (again on a stopped one's ports and keys), and
// stopping it.

// service is the consensusd process under test.
type service struct {
	cmd     *exec.Cmd
	pid     int
	origin  string
	ops     string // ops listener address the bench asked for
	opToken string
	key     []byte // CONSENSUS_TOKEN_KEY
	log     *benchLog
	mailDir string
	logPath string
	exited  chan error
	env     []string // settings of its own, kept across restarts
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomText(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// buildService builds consensusd from the working tree into the work directory.
func buildService(ctx context.Context, cfg config) (string, time.Duration, error) {
	bin := filepath.Join(cfg.WorkDir, "bin", "consensusd")
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/consensusd")
	cmd.Dir = cfg.Root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", 0, fmt.Errorf("go build ./cmd/consensusd: %w", err)
	}
	return bin, time.Since(start), nil
}

// startService runs consensusd with a clean environment: only the settings
// below, so nothing from the caller's shell changes what is measured. With
// prev (a stopped service) it starts again on prev's ports with prev's
// operator token, token key and log settings, so what prev issued stays
// valid; without prev, lg is the log's settings (its key and witness).
func startService(ctx context.Context, cfg config, bin string, cl *cluster, prev *service, lg *benchLog) (*service, error) {
	var s *service
	if prev != nil {
		s = &service{origin: prev.origin, ops: prev.ops, opToken: prev.opToken, key: prev.key, env: prev.env, log: prev.log}
	} else {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		opsPort, err := freePort()
		if err != nil {
			return nil, err
		}
		s = &service{
			origin:  "http://127.0.0.1:" + strconv.Itoa(port),
			ops:     "127.0.0.1:" + strconv.Itoa(opsPort),
			opToken: "cso_" + randomText(32),
			key:     make([]byte, 32),
			log:     lg,
		}
		if _, err := rand.Read(s.key); err != nil {
			return nil, err
		}
	}
	s.mailDir = filepath.Join(cfg.WorkDir, "mail")
	s.logPath = filepath.Join(cfg.WorkDir, "consensusd.log")
	s.exited = make(chan error, 1)
	if err := os.RemoveAll(s.mailDir); err != nil {
		return nil, err
	}
	port := strings.TrimPrefix(s.origin, "http://127.0.0.1:")
	mode := os.O_CREATE | os.O_TRUNC | os.O_WRONLY
	if prev != nil {
		mode = os.O_CREATE | os.O_APPEND | os.O_WRONLY // after the first start's lines
	}
	logf, err := os.OpenFile(s.logPath, mode, 0o600)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin)
	s.cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"CONSENSUS_ENV=local",
		"DATABASE_URL=" + cl.appURL(serviceDB),
		"CONSENSUS_LISTEN=127.0.0.1:" + port,
		"CONSENSUS_PUBLIC_ORIGIN=" + s.origin,
		"CONSENSUS_OPERATOR_TOKEN=" + s.opToken,
		"CONSENSUS_TOKEN_KEY=" + hex.EncodeToString(s.key),
		"CONSENSUS_MAIL_URL=maildir://" + s.mailDir,
		"CONSENSUS_RATE_LIMIT=0",
		"CONSENSUS_OUTBOX_POLL=200ms",
		// The ops listener: pprof is captured when it answers.
		"CONSENSUS_OPS_LISTEN=" + s.ops,
		"CONSENSUS_PPROF=true",
	}
	if s.log != nil {
		s.cmd.Env = append(s.cmd.Env, s.log.env...)
	}
	// The Go runtime's memory settings, when the bench is given them, reach
	// the service: what a memory limit costs is measured by running the
	// bench with and without it. So does the log's interval: what the log's
	// integration costs the appends is measured with it at its default and
	// at 1m (no integration during a measurement).
	for _, name := range []string{"GOMEMLIMIT", "GOGC", "CONSENSUS_LOG_INTERVAL"} {
		if v, ok := os.LookupEnv(name); ok {
			s.cmd.Env = append(s.cmd.Env, name+"="+v)
		}
	}
	s.cmd.Env = append(s.cmd.Env, s.env...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start consensusd: %w", err)
	}
	s.pid = s.cmd.Process.Pid
	go func() { s.exited <- s.cmd.Wait(); logf.Close() }()

	deadline := time.Now().Add(60 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case err := <-s.exited:
			s.exited <- err
			return nil, fmt.Errorf("consensusd exited during start (%v); its log: %s", err, s.logPath)
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := client.Get(s.origin + "/api/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("consensusd did not answer /api/health within 60 s; its log: %s", s.logPath)
		}
	}
}

func (s *service) alive() error {
	select {
	case err := <-s.exited:
		s.exited <- err
		return fmt.Errorf("consensusd exited (%v); its log: %s", err, s.logPath)
	default:
		return nil
	}
}

func (s *service) stop() {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		s.exited <- err
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
	}
}
