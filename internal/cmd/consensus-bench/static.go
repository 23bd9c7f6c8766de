package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
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

// staticEnv, when set to a directory, turns this program into the room-read
// baseline: a minimal net/http server answering GET /room/N with the bytes
// and headers the service sent for a room of N events, from memory.
const staticEnv = "CONSENSUS_BENCH_STATIC_DIR"

type staticRoom struct {
	Header http.Header `json:"header"`
	Body   []byte      `json:"body"`
}

// saveStaticRoom stores what the service answered so the baseline can serve
// the same bytes. Date and hop-by-hop fields are left to net/http.
func saveStaticRoom(dir string, size int, header http.Header, body []byte) error {
	h := http.Header{}
	for k, vs := range header {
		switch k {
		case "Date", "Connection", "Transfer-Encoding", "Keep-Alive":
			continue
		}
		h[k] = vs
	}
	buf, err := json.Marshal(staticRoom{Header: h, Body: body})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "room-"+strconv.Itoa(size)+".json"), buf, 0o600)
}

func serveStatic(dir string, out io.Writer) error {
	files, err := filepath.Glob(filepath.Join(dir, "room-*.json"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no room-*.json in %s", dir)
	}
	mux := http.NewServeMux()
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		var room staticRoom
		if err := json.Unmarshal(raw, &room); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		size := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(name), "room-"), ".json")
		mux.HandleFunc("GET /room/"+size, func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			for k, vs := range room.Header {
				h[k] = vs
			}
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(room.Body)
		})
	}
	return serveBaseline(mux, out)
}

// startStatic runs this same executable in static mode, as its own process
// (consensusd is one too, so both sides pay for the same process boundary).
func startStatic(dir string) (*baselineProcess, error) {
	return startBaseline(staticEnv, dir, "static server")
}

// staticRoomPath is where the static server serves the room of size events.
func staticRoomPath(size int) string { return "/room/" + strconv.Itoa(size) }

// serveBaseline serves mux on a free loopback port, first printing the
// "listening ADDR" line startBaseline reads.
func serveBaseline(mux *http.ServeMux, out io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "listening %s\n", ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	return srv.Serve(ln)
}

// baselineProcess is this executable run again as a baseline server.
type baselineProcess struct {
	cmd  *exec.Cmd
	addr string
}

// startBaseline runs this executable with env=value (the mode its main
// reads) and waits for the address its server listens on.
func startBaseline(env, value, what string) (*baselineProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{env + "=" + value, "PATH=" + os.Getenv("PATH")}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("%s did not start (%v, %q)", what, err, line)
	}
	return &baselineProcess{cmd: cmd, addr: addr}, nil
}

func (p *baselineProcess) stop() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
}
