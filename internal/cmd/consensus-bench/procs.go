package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The private PostgreSQL cluster the bench runs on: starting it, its
// URLs, readying it before a measured side, and stopping it. Readings from
// /proc are in procstat.go, consensusd's process in service.go.

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
