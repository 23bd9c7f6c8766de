package proctest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Replica is one consensusd process; it keeps its address across restarts.
type Replica struct {
	Index   int
	cluster *Cluster
	bin     string // the consensusd it runs, when not the cluster's (Replace)

	mu      sync.Mutex
	listen  string // what CONSENSUS_LISTEN is set to
	addr    string // host:port it serves on
	ops     string // host:port of its operations listener
	cmd     *exec.Cmd
	exited  chan struct{}
	logs    bytes.Buffer
	starts  int
	exitErr error
}

// Addr is host:port the replica serves on.
func (r *Replica) Addr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addr
}

// URL is the replica's base URL.
func (r *Replica) URL() string { return "http://" + r.Addr() }

// OpsAddr is host:port of the replica's operations listener (/metrics,
// /livez, /readyz), as its last start logged it.
func (r *Replica) OpsAddr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ops
}

// LogCount is how many JSON log lines, across restarts, carry msg as their
// message.
func (r *Replica) LogCount(msg string) int {
	return strings.Count(r.Logs(), `"msg":"`+msg+`"`)
}

// WaitLog waits up to 20 s until n log lines carry msg, and fails tb with
// the logs otherwise.
func (r *Replica) WaitLog(tb testing.TB, msg string, n int) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for r.LogCount(msg) < n {
		if time.Now().After(deadline) {
			tb.Fatalf("proctest: replica %d: no %d× %q in the log:\n%s", r.Index, n, msg, r.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Logs returns everything the replica wrote to stdout and stderr, across
// restarts (each start is preceded by a line naming it).
func (r *Replica) Logs() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.String()
}

// Running reports whether the process is alive.
func (r *Replica) Running() bool {
	r.mu.Lock()
	ch := r.exited
	r.mu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

// start runs the process and waits until it logs that it serves. On a
// restart the address is reused; binding it is retried briefly.
func (r *Replica) start(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for attempt := 0; ; attempt++ {
		err := r.startOnce()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || !strings.Contains(err.Error(), "address already in use") {
			tb.Fatalf("proctest: replica %d: %v\n%s", r.Index, err, r.Logs())
		}
		time.Sleep(time.Duration(50*(attempt+1)) * time.Millisecond)
	}
}

func (r *Replica) startOnce() error {
	r.mu.Lock()
	listen := r.listen
	r.starts++
	fmt.Fprintf(&r.logs, "=== proctest: start %d of replica %d on %s\n", r.starts, r.Index, listen)
	r.mu.Unlock()

	bin := r.cluster.bin
	if r.bin != "" {
		bin = r.bin
	}
	cmd := exec.Command(bin)
	cmd.Env = r.cluster.env(listen)
	setProcAttr(cmd)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	ready := make(chan [2]string, 1) // listen and ops addresses
	go func() {
		err := cmd.Wait()
		r.mu.Lock()
		r.exitErr = err
		r.mu.Unlock()
		pw.Close()
		close(exited)
	}()
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			r.mu.Lock()
			r.logs.Write(line)
			r.logs.WriteByte('\n')
			r.mu.Unlock()
			var rec struct{ Msg, Listen, Ops string }
			if json.Unmarshal(line, &rec) == nil && rec.Msg == "consensusd serving" {
				select {
				case ready <- [2]string{rec.Listen, rec.Ops}:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case addrs := <-ready:
		r.mu.Lock()
		r.cmd, r.exited, r.addr, r.listen, r.ops = cmd, exited, addrs[0], addrs[0], addrs[1]
		r.mu.Unlock()
		return nil
	case <-exited:
		<-scanned
		r.mu.Lock()
		err := r.exitErr
		tail := r.logs.String()
		r.mu.Unlock()
		if i := strings.LastIndex(tail, "=== proctest: start"); i >= 0 {
			tail = tail[i:]
		}
		return fmt.Errorf("consensusd exited before serving (%v): %s", err, tail)
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("consensusd did not serve within 60s")
	}
}

// Kill sends SIGKILL (no shutdown code runs) and waits for the exit.
func (r *Replica) Kill(tb testing.TB) {
	tb.Helper()
	if !r.Running() {
		tb.Fatalf("proctest: replica %d is not running", r.Index)
	}
	r.kill()
}

func (r *Replica) kill() {
	r.mu.Lock()
	cmd, ch := r.cmd, r.exited
	r.mu.Unlock()
	if cmd == nil || ch == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-ch
}

// Signal sends sig to the running replica without waiting for anything;
// Wait collects the exit.
func (r *Replica) Signal(tb testing.TB, sig os.Signal) {
	tb.Helper()
	r.mu.Lock()
	cmd := r.cmd
	r.mu.Unlock()
	if cmd == nil || !r.Running() {
		tb.Fatalf("proctest: replica %d is not running", r.Index)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		tb.Fatalf("proctest: replica %d: signal %v: %v", r.Index, sig, err)
	}
}

// Wait waits up to timeout for the replica to exit and returns how it
// exited: nil for status 0, else the *exec.ExitError. It fails tb when the
// replica was never started or is still running at the timeout.
func (r *Replica) Wait(tb testing.TB, timeout time.Duration) error {
	tb.Helper()
	r.mu.Lock()
	ch := r.exited
	r.mu.Unlock()
	if ch == nil {
		tb.Fatalf("proctest: replica %d was never started", r.Index)
	}
	select {
	case <-ch:
	case <-time.After(timeout):
		tb.Fatalf("proctest: replica %d did not exit within %s:\n%s", r.Index, timeout, r.Logs())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exitErr
}

// Stop sends SIGTERM and waits up to 30 s for a graceful exit (then kills).
func (r *Replica) Stop(tb testing.TB) {
	tb.Helper()
	r.mu.Lock()
	cmd, ch := r.cmd, r.exited
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		r.kill()
		tb.Errorf("proctest: replica %d ignored SIGTERM for 30s", r.Index)
	}
}

// Restart starts the stopped or killed replica again on its address.
func (r *Replica) Restart(tb testing.TB) {
	tb.Helper()
	if r.Running() {
		tb.Fatalf("proctest: replica %d is still running", r.Index)
	}
	r.start(tb)
}
