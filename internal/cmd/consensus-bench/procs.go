package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// cluster is the private PostgreSQL the bench runs on: one database for the
// service, one for pgbench's baseline tables, same server.
type cluster struct {
	dir        string
	socket     string // Unix socket directory
	user       string // the cluster's superuser: setup, baselines, CHECKPOINT
	appUser    string // the service's role, which row-level security binds
	pgbench    string // pgbench binary
	postmaster int    // pid, for CPU accounting
	admin      *pgx.Conn
	info       map[string]string // server_version, fsync, ...
}

const (
	serviceDB  = "bench_service"
	baselineDB = "bench_baseline"
)

// findPGBin finds a PostgreSQL client program as pg.sh finds the server:
// on PATH, else the newest /usr/lib/postgresql/*/bin.
func findPGBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		p := filepath.Join(dirs[i], name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH or under /usr/lib/postgresql/*/bin (Debian: apt-get install postgresql)", name)
}

// startCluster starts (or reuses) the private cluster with deploy/local/pg.sh,
// without --fast, so fsync stays on, and recreates both bench databases so
// every run starts from the same empty state.
func startCluster(ctx context.Context, cfg config) (*cluster, error) {
	pgbench, err := findPGBin("pgbench")
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(cfg.Root, "deploy", "local", "pg.sh"), "start", cfg.PGDir)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("deploy/local/pg.sh start %s: %w", cfg.PGDir, err)
	}
	u, err := url.Parse(strings.TrimSpace(string(out)))
	if err != nil {
		return nil, fmt.Errorf("pg.sh printed an unexpected URL %q", out)
	}
	// pg.sh start prints the service's role; admin-url the superuser's,
	// which creates the databases, runs the baseline and checkpoints.
	admin, err := exec.CommandContext(ctx, filepath.Join(cfg.Root, "deploy", "local", "pg.sh"), "admin-url", cfg.PGDir).Output()
	if err != nil {
		return nil, fmt.Errorf("deploy/local/pg.sh admin-url %s: %w", cfg.PGDir, err)
	}
	au, err := url.Parse(strings.TrimSpace(string(admin)))
	if err != nil {
		return nil, fmt.Errorf("pg.sh printed an unexpected URL %q", admin)
	}
	c := &cluster{dir: cfg.PGDir, socket: u.Query().Get("host"), user: au.Query().Get("user"), appUser: u.Query().Get("user"), pgbench: pgbench, info: map[string]string{}}
	if c.socket == "" || c.user == "" || c.appUser == "" {
		return nil, fmt.Errorf("pg.sh printed a URL without host or user: %q, %q", out, admin)
	}
	if c.admin, err = pgx.Connect(ctx, c.url("postgres")); err != nil {
		return nil, fmt.Errorf("connect to the private cluster: %w", err)
	}
	for _, db := range []string{serviceDB, baselineDB} {
		if _, err := c.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
			return nil, fmt.Errorf("drop %s: %w", db, err)
		}
		if _, err := c.admin.Exec(ctx, "CREATE DATABASE "+db+" OWNER "+c.appUser); err != nil {
			return nil, fmt.Errorf("create %s: %w", db, err)
		}
	}
	var backend int
	if err := c.admin.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return nil, err
	}
	if st, err := readStat(backend); err == nil {
		c.postmaster = st.ppid
	}
	for _, name := range []string{"server_version", "fsync", "synchronous_commit", "full_page_writes", "shared_buffers", "max_connections", "wal_level"} {
		var v string
		if err := c.admin.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err == nil {
			c.info[name] = v
		}
	}
	if c.info["fsync"] != "on" {
		return nil, fmt.Errorf("the cluster in %s runs with fsync=%s; the bench needs fsync on (stop it with deploy/local/pg.sh stop %s and run again)", cfg.PGDir, c.info["fsync"], cfg.PGDir)
	}
	if v, err := exec.CommandContext(ctx, pgbench, "--version").Output(); err == nil {
		c.info["pgbench"] = strings.TrimSpace(string(v))
	}
	return c, nil
}

// url is db's URL as the cluster's superuser.
func (c *cluster) url(db string) string {
	q := url.Values{"host": {c.socket}, "user": {c.user}, "sslmode": {"disable"}}
	return "postgres:///" + db + "?" + q.Encode()
}

// appURL is db's URL as the service's role: the service runs as it does in
// production, under row-level security.
func (c *cluster) appURL(db string) string {
	q := url.Values{"host": {c.socket}, "user": {c.appUser}, "sslmode": {"disable"}}
	return "postgres:///" + db + "?" + q.Encode()
}

// quietSQL vacuums and analyzes what the loads write, by database: the
// service's rooms and its job queue, and the baseline's whole database.
var quietSQL = []struct{ db, sql string }{
	{serviceDB, "VACUUM (ANALYZE) events, agreements, participants, river_job"},
	{baselineDB, "VACUUM (ANALYZE)"},
}

// quiet readies the cluster for a measured side. It vacuums and
// analyzes what the loads before wrote: autovacuum would otherwise start
// on its own clock, inside whichever side it falls in (one run caught
// VACUUM ANALYZE of the events table in the listeners' append round,
// after the long run's 70,000 inserts). Then it checkpoints.
func (c *cluster) quiet(ctx context.Context) error {
	for _, q := range quietSQL {
		conn, err := pgx.Connect(ctx, c.url(q.db))
		if err != nil {
			return fmt.Errorf("vacuum %s: %w", q.db, err)
		}
		_, err = conn.Exec(ctx, q.sql)
		_ = conn.Close(ctx)
		if err != nil {
			return fmt.Errorf("vacuum %s: %w", q.db, err)
		}
	}
	return c.checkpoint(ctx)
}

// checkpoint flushes dirty buffers, so a measurement does not pay for the
// previous load's checkpoint.
func (c *cluster) checkpoint(ctx context.Context) error {
	_, err := c.admin.Exec(ctx, "CHECKPOINT")
	return err
}

func (c *cluster) stop(cfg config) {
	if c.admin != nil {
		_ = c.admin.Close(context.Background())
	}
	if cfg.KeepPG {
		return
	}
	cmd := exec.Command(filepath.Join(cfg.Root, "deploy", "local", "pg.sh"), "stop", cfg.PGDir)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "consensus-bench: stopping PostgreSQL:", err)
	}
}

// cpu returns the CPU time the whole cluster has used: the postmaster, its
// live children, and (through cutime/cstime) the children it has reaped, so a
// backend that exits between two readings is still counted.
//
// A child reaped while /proc is being scanned would be in neither sum (not
// yet in the postmaster's cutime when it was read, gone from /proc when its
// turn came): pgbench's sixteen backends all exit as a run ends, right when
// the reading is taken, and whole runs' backend time went missing that way.
// So the reading is repeated until the postmaster reaped nothing during it.
func (c *cluster) cpu() time.Duration {
	if c.postmaster == 0 {
		return 0
	}
	for try := 0; ; try++ {
		st, err := readStat(c.postmaster)
		if err != nil {
			return 0
		}
		total := st.utime + st.stime + st.cutime + st.cstime
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if s, err := readStat(pid); err == nil && s.ppid == c.postmaster {
				total += s.utime + s.stime
			}
		}
		again, err := readStat(c.postmaster)
		if err != nil || (again.cutime == st.cutime && again.cstime == st.cstime) || try == 50 {
			return total
		}
		time.Sleep(2 * time.Millisecond)
	}
}

type procStat struct {
	ppid                         int
	utime, stime, cutime, cstime time.Duration
}

// clockTick is USER_HZ, 100 on every Linux the bench runs on.
const clockTick = 10 * time.Millisecond

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// The command name is in parentheses and may hold spaces: split after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); ppid is field 4, utime..cstime fields 14..17.
	if len(f) < 15 {
		return procStat{}, errors.New("short stat")
	}
	n := func(k int) int64 { v, _ := strconv.ParseInt(f[k-3], 10, 64); return v }
	return procStat{
		ppid:   int(n(4)),
		utime:  time.Duration(n(14)) * clockTick,
		stime:  time.Duration(n(15)) * clockTick,
		cutime: time.Duration(n(16)) * clockTick,
		cstime: time.Duration(n(17)) * clockTick,
	}, nil
}

func procCPU(pid int) time.Duration {
	st, err := readStat(pid)
	if err != nil {
		return 0
	}
	return st.utime + st.stime
}

// selfCPU is the bench process's own CPU time (the load generator).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS sets the process's VmHWM back to its current RSS
// (clear_refs: 5), so the next readPeakRSS covers one load only.
func resetPeakRSS(pid int) error {
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0)
}

// readPeakRSS returns VmHWM in KiB.
func readPeakRSS(pid int) (int64, error) { return readStatusKiB(pid, "VmHWM:") }

// readRSS returns VmRSS in KiB.
func readRSS(pid int) (int64, error) { return readStatusKiB(pid, "VmRSS:") }

func readStatusKiB(pid int, field string) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, errors.New(field + " not found")
}

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
		s = &service{origin: prev.origin, ops: prev.ops, opToken: prev.opToken, key: prev.key, log: prev.log}
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
