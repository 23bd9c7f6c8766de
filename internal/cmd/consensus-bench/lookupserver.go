package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"bufio"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// lookupEnv, when set to a database URL, turns this program into the 304
// path's second baseline: a minimal net/http server that answers each
// request with one indexed lookup through pgx and a 304. It is the naive
// design of the service's conditional read (look the credential up, answer
// "not modified"), with none of its batching or caching.
const lookupEnv = "CONSENSUS_BENCH_LOOKUP_URL"

// lookupPoolConns is the pool the lookup server keeps: consensusd's default.
const lookupPoolConns = 16

// serveLookup serves GET /lookup with "Authorization: Bearer N": the row of
// tokens whose hash is sha256 of N as a 4-byte big-endian integer (the
// baseline table's keys), 304 when it exists, 404 otherwise.
func serveLookup(dbURL string, out io.Writer) error {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	cfg.MaxConns = lookupPoolConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /lookup", func(w http.ResponseWriter, r *http.Request) {
		k, err := strconv.ParseUint(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), 10, 32)
		if err != nil {
			http.Error(w, "bad credential", http.StatusUnauthorized)
			return
		}
		var key [4]byte
		binary.BigEndian.PutUint32(key[:], uint32(k))
		h := sha256.Sum256(key[:])
		var participant, agreement uuid.UUID
		var revoked *time.Time
		err = pool.QueryRow(r.Context(), `SELECT participant_id, agreement_id, revoked_at FROM tokens WHERE token_hash = $1`, h[:]).Scan(&participant, &agreement, &revoked)
		switch {
		case errors.Is(err, pgx.ErrNoRows) || revoked != nil:
			http.NotFound(w, r)
		case err != nil:
			http.Error(w, "database", http.StatusServiceUnavailable)
		default:
			w.Header().Set("ETag", `"`+participant.String()[:8]+`"`)
			w.WriteHeader(http.StatusNotModified)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "listening %s\n", ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	return srv.Serve(ln)
}

// lookupServer is the lookup baseline's process.
type lookupServer struct {
	cmd  *exec.Cmd
	addr string
}

// startLookup runs this executable as the lookup server on dbURL.
func startLookup(dbURL string) (*lookupServer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{lookupEnv + "=" + dbURL, "PATH=" + os.Getenv("PATH")}
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
		return nil, fmt.Errorf("lookup server did not start (%v, %q)", err, line)
	}
	return &lookupServer{cmd: cmd, addr: addr}, nil
}

func (s *lookupServer) stop() {
	if s == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
}

// lookupLoad sends the tokens' keys, a random one per request.
func (b *bench) lookupLoad(name string, d time.Duration) wrkLoad {
	n := b.cfg.Agreements * b.cfg.Parts
	ts := make([]readTarget, n)
	for i := range ts {
		ts[i] = readTarget{Path: "/lookup", Auth: "Bearer " + strconv.Itoa(i+1)}
	}
	return wrkLoad{Name: name, Script: readLua(ts), BaseURL: "http://" + b.lookup.addr, Conns: b.cfg.Conns, Duration: d}
}
