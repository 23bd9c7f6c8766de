// Command consensus-bench is `make bench`: a black-box benchmark of the
// service's hot paths over its public HTTP API, each measured side by side
// with a baseline that shows what the machine can do (the performance contract).
//
// It starts everything itself: a private PostgreSQL (fsync on) through
// deploy/local/pg.sh, a freshly built consensusd as a separate process (local
// environment, Maildir mail, rate limit off, generated secrets), agreements
// and claimed participants made through the operator and agent APIs, and
// rooms filled to three sizes. Then, per path, it alternates the service and
// its baseline for several rounds (the machine is shared and noisy: only
// figures taken minutes apart on the same machine compare), and writes
// bench/results.md with every figure and every ratio, printing the ratio
// table last.
//
//	consensus-bench [-duration 4s] [-rounds 3] [-smoke] [-out bench/results.md]
//
// See -help for every flag. BENCH_DURATION and BENCH_ROUNDS set the defaults
// of -duration and -rounds.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is one run's settings.
type config struct {
	Root       string        // repository root (holds go.mod and deploy/local/pg.sh)
	PGDir      string        // private PostgreSQL cluster directory
	WorkDir    string        // binaries, Maildir, logs and baseline files of this run
	Out        string        // results.md path
	Profiles   string        // directory for pprof files
	Duration   time.Duration // per measurement (whole seconds: pgbench -T takes seconds)
	Rounds     int           // A/B rounds per path
	Warmup     time.Duration // unrecorded load on each service path before its rounds
	Conns      int           // connections (wrk, vegeta) and clients (pgbench)
	Agreements int
	Parts      int    // participants per agreement
	Sizes      [3]int // small, medium, large room sizes in events
	FlatN      int    // appends per flatness measurement
	FlatConns  int    // connections for the flatness measurement
	FlatRounds int
	Pause      time.Duration // settle time between measurements
	// The busy room, the long run and the listeners (extra.go).
	BusyDuration time.Duration // per busy-room measurement (a room holds Parts × 100 events)
	LongDuration time.Duration // the long append run; 0 skips it
	ListenRooms  int           // listener rooms; 0 skips the listeners
	ListenParts  int           // participants per listener room
	StreamsPer   int           // streams per listener participant
	PollsPer     int           // held long polls per listener participant
	Waves        int           // posts per listener room
	// The transparency log (logbench.go): rooms driven to an outcome for
	// the proof's wait, and rooms loaded for the integrator's throughput
	// (0 skips either).
	ProofRooms int
	LogRooms   int
	PProf      bool // capture profiles when the ops listener serves pprof
	KeepPG     bool // leave the cluster running at the end
	// Scale loads ScaleAgreements rooms (scale.go) into the service's
	// tables before the usual loads, and the results get a scale section.
	Scale           bool
	ScaleAgreements int
	Smoke           bool
	// Only names the steps to run (stepNames); empty runs them all. A
	// partial run writes its results beside the work files, never over
	// bench/results.md.
	Only       []string
	Invocation string // how the run was started, for the report
	Stdout     io.Writer
}

func defaultConfig() config {
	return config{
		Duration:   4 * time.Second,
		Rounds:     3,
		Warmup:     time.Second,
		Conns:      16,
		Agreements: 16,
		Parts:      50,
		Sizes:      [3]int{30, 300, 3000},
		FlatN:      160,
		FlatConns:  4,
		FlatRounds: 5,
		Pause:      500 * time.Millisecond,
		PProf:      true,
		// A participant holds at most 4 waiting readers: 200 rooms × 10
		// participants × (1 stream + 1 poll) = 2,000 + 2,000. The long
		// run appends into these rooms first: 10 participants of 100
		// events each give 200,000, where 5 (2 streams and 2 polls each)
		// ran out at about 3,600 appends a second for 23 s.
		// A room takes at most 50 × 100 = 5,000 appends (eventLimit per
		// participant and revision, at most 50 participants): a side of 1 s
		// leaves the rate room up to 5,000 a second. At 2 s the room ran
		// out before the end in every round (about 2,500 a second), and
		// the service's rate was only that bound.
		BusyDuration: time.Second,
		LongDuration: 20 * time.Second,
		ListenRooms:  200,
		ListenParts:  10,
		StreamsPer:   1,
		PollsPer:     1,
		Waves:        5,
		// 40 outcomes, one every 170 ms: about 7 integrator intervals.
		ProofRooms: 40,
		// 60,000 leaves: six seconds at the 10,000 a second of the target.
		LogRooms: 30_000,
		// 100,000 rooms × 3 participants × 10 events
		ScaleAgreements: 100_000,
		Stdout:          os.Stdout,
	}
}

// smokeConfig shrinks everything so the whole tool runs in about twenty
// seconds; the figures mean nothing, the point is that every step works.
func smokeConfig(c config) config {
	c.Smoke = true
	c.Duration = time.Second
	c.Rounds = 1
	c.Warmup = 0
	c.Agreements = 4
	// Participants of 100 events each: a one-second wrk load must not use
	// up a wrk thread's share of them. A quiet machine appends about 2,500
	// a second over the rooms, and 2,400 into the busy room (which has
	// Parts participants), so 48 leave room to spare.
	c.Parts = 48
	c.Sizes = [3]int{4, 12, 40}
	c.FlatN = 12
	c.FlatRounds = 1
	c.Pause = 0
	c.PProf = false
	// The long run appends into the listener rooms (10 participants of
	// 100 events each per room): 24 rooms hold 24,000 events, well beyond
	// the 3,200 a one-second run takes on a quiet machine (appends to one
	// room share a commit).
	c.LongDuration = time.Second
	c.ListenRooms = 24
	c.Waves = 2
	c.ProofRooms = 3
	c.LogRooms = 500
	return c
}

func main() {
	// The bench re-executes itself as the 304 path's lookup server.
	if u := os.Getenv(lookupEnv); u != "" {
		if err := serveLookup(u, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "consensus-bench lookup server:", err)
			os.Exit(1)
		}
		return
	}
	// The bench re-executes itself as the baseline's static HTTP server.
	if dir := os.Getenv(staticEnv); dir != "" {
		if err := serveStatic(dir, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "consensus-bench static server:", err)
			os.Exit(1)
		}
		return
	}
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "consensus-bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "consensus-bench:", err)
		os.Exit(1)
	}
}

func envDefault(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}

func parseFlags(args []string) (config, error) {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("consensus-bench", flag.ContinueOnError)
	dur := fs.String("duration", envDefault("BENCH_DURATION", cfg.Duration.String()), "length of each measurement, whole seconds (env BENCH_DURATION)")
	rounds := fs.Int("rounds", 0, "A/B rounds per path (env BENCH_ROUNDS; default 3)")
	smoke := fs.Bool("smoke", false, "tiny run: 1 s per path, 1 round, 4 agreements × 16 participants (checks the tool, not the service)")
	root := fs.String("root", "", "repository root (default: the nearest parent directory with go.mod)")
	pgdir := fs.String("pgdata", "", "private PostgreSQL directory (default ROOT/.data/pgbench)")
	work := fs.String("work", "", "work directory for binaries, mail and logs (default ROOT/.data/bench)")
	out := fs.String("out", "", "results file (default ROOT/bench/results.md)")
	profiles := fs.String("profiles", "", "pprof directory (default ROOT/bench/profiles)")
	fs.IntVar(&cfg.Conns, "conns", cfg.Conns, "connections (wrk) and clients (pgbench) for append, read and 304; also vegeta's for exchange, claim and fill")
	long := fs.String("long", envDefault("BENCH_LONG", cfg.LongDuration.String()), "length of the long append run for peak RSS, whole seconds; 0 skips it (env BENCH_LONG)")
	listenRooms := fs.Int("listen-rooms", envInt("BENCH_LISTEN_ROOMS", cfg.ListenRooms), "listener rooms (each 10 participants × 1 stream + 1 long poll); 0 skips the listeners (env BENCH_LISTEN_ROOMS)")
	fs.IntVar(&cfg.LogRooms, "log-rooms", envInt("BENCH_LOG_ROOMS", cfg.LogRooms), "rooms loaded into the tables for the log integrator's throughput (2 leaves each); 0 skips it (env BENCH_LOG_ROOMS)")
	fs.IntVar(&cfg.ProofRooms, "proof-rooms", cfg.ProofRooms, "rooms driven to an outcome for the wait until their proof is cosigned; 0 skips it")
	fs.BoolVar(&cfg.PProf, "pprof", cfg.PProf, "capture CPU and allocation profiles when the service serves /debug/pprof on its ops listener")
	fs.BoolVar(&cfg.KeepPG, "keep-pg", false, "leave the private PostgreSQL running at the end")
	scale := fs.Int("scale", envInt("BENCH_SCALE", 0), "1: first load 100,000 agreements, 300,000 participants and 1,000,000 events into the service's tables, and write the results as results.md's scale section (env BENCH_SCALE)")
	fs.IntVar(&cfg.ScaleAgreements, "scale-agreements", envInt("BENCH_SCALE_AGREEMENTS", cfg.ScaleAgreements), "rooms the scale load writes, each of 3 participants and 10 events (env BENCH_SCALE_AGREEMENTS)")
	only := fs.String("only", envDefault("BENCH_ONLY", ""), "comma-separated steps to run, of "+strings.Join(stepNames, ", ")+"; the results go to WORK/results-only.md unless -out is given (env BENCH_ONLY)")
	fs.StringVar(&cfg.Invocation, "invocation", "", "how the run was started, recorded in the results (make bench sets it)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	switch *scale {
	case 0:
	case 1:
		cfg.Scale = true
	default:
		return cfg, fmt.Errorf("-scale (BENCH_SCALE): want 0 or 1, got %d", *scale)
	}
	if cfg.ScaleAgreements < 1 {
		return cfg, fmt.Errorf("-scale-agreements: want at least 1, got %d", cfg.ScaleAgreements)
	}
	if *smoke {
		logRooms, proofRooms, pprof := cfg.LogRooms, cfg.ProofRooms, cfg.PProf
		cfg = smokeConfig(cfg)
		if isFlagSet(fs, "pprof") {
			cfg.PProf = pprof
		}
		if isFlagSet(fs, "log-rooms") || os.Getenv("BENCH_LOG_ROOMS") != "" {
			cfg.LogRooms = logRooms
		}
		if isFlagSet(fs, "proof-rooms") {
			cfg.ProofRooms = proofRooms
		}
	}
	if *only != "" {
		if cfg.Scale {
			return cfg, fmt.Errorf("-only and -scale: a scale run measures every step")
		}
		for _, name := range strings.Split(*only, ",") {
			name = strings.TrimSpace(name)
			if !slices.Contains(stepNames, name) {
				return cfg, fmt.Errorf("-only: unknown step %q; the steps are %s", name, strings.Join(stepNames, ", "))
			}
			cfg.Only = append(cfg.Only, name)
		}
	}
	if !*smoke || isFlagSet(fs, "duration") || os.Getenv("BENCH_DURATION") != "" {
		d, err := time.ParseDuration(*dur)
		if err != nil || d < time.Second || d%time.Second != 0 {
			return cfg, fmt.Errorf("-duration: want whole seconds such as 4s or 10s (pgbench -T counts seconds), got %q", *dur)
		}
		cfg.Duration = d
	}
	if !*smoke || isFlagSet(fs, "long") || os.Getenv("BENCH_LONG") != "" {
		d, err := time.ParseDuration(*long)
		if err != nil || d < 0 || d%time.Second != 0 {
			return cfg, fmt.Errorf("-long: want whole seconds such as 20s, or 0, got %q", *long)
		}
		cfg.LongDuration = d
	}
	if !*smoke || isFlagSet(fs, "listen-rooms") || os.Getenv("BENCH_LISTEN_ROOMS") != "" {
		cfg.ListenRooms = *listenRooms // a smoke run keeps its own unless told
	}
	if *rounds == 0 && !*smoke {
		if v := os.Getenv("BENCH_ROUNDS"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return cfg, fmt.Errorf("BENCH_ROUNDS: want a whole number, got %q", v)
			}
			*rounds = n
		}
	}
	if *rounds != 0 {
		if *rounds < 1 || *rounds > 50 {
			return cfg, fmt.Errorf("-rounds: want 1 to 50, got %d", *rounds)
		}
		cfg.Rounds = *rounds
		if !cfg.Smoke {
			// A flatness round is short and its rate noisy: never fewer than 5.
			cfg.FlatRounds = min(max(*rounds, 5), cfg.Agreements-3)
		}
	}
	if cfg.Conns < 1 || cfg.Conns > 128 {
		return cfg, fmt.Errorf("-conns: want 1 to 128, got %d", cfg.Conns)
	}
	r := *root
	if r == "" {
		var err error
		if r, err = findRoot(); err != nil {
			return cfg, err
		}
	}
	r, err := filepath.Abs(r)
	if err != nil {
		return cfg, err
	}
	cfg.Root = r
	cfg.PGDir = orDefault(*pgdir, filepath.Join(r, ".data", "pgbench"))
	cfg.WorkDir = orDefault(*work, filepath.Join(r, ".data", "bench"))
	cfg.Out = orDefault(*out, filepath.Join(r, "bench", "results.md"))
	if len(cfg.Only) > 0 && *out == "" {
		cfg.Out = filepath.Join(cfg.WorkDir, "results-only.md")
	}
	cfg.Profiles = orDefault(*profiles, filepath.Join(r, "bench", "profiles"))
	if cfg.Scale && *profiles == "" {
		// A scale run keeps the small database's profiles.
		cfg.Profiles = filepath.Join(r, "bench", "profiles", "scale")
	}
	// Absolute paths: the Maildir URL and the child processes need them.
	for _, p := range []*string{&cfg.PGDir, &cfg.WorkDir, &cfg.Out, &cfg.Profiles} {
		if *p, err = filepath.Abs(*p); err != nil {
			return cfg, err
		}
	}
	if cfg.Invocation == "" {
		cfg.Invocation = "consensus-bench " + strings.Join(args, " ")
	}
	return cfg, cfg.check()
}

func (c config) check() error {
	if c.Agreements < 3+c.FlatRounds {
		return fmt.Errorf("need at least %d agreements (3 read rooms and one fresh small room per flatness round), have %d", 3+c.FlatRounds, c.Agreements)
	}
	if c.Sizes[2] > c.Parts*eventLimit {
		return fmt.Errorf("a room of %d events needs more than %d participants (%d events each at most)", c.Sizes[2], c.Parts, eventLimit)
	}
	return nil
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(strings.TrimSpace(os.Getenv(name))); err == nil {
		return v
	}
	return def
}

func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "deploy", "local", "pg.sh")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root not found (no go.mod with deploy/local/pg.sh above the working directory); pass -root")
		}
		dir = parent
	}
}

// logf prints a progress line.
func (c config) logf(format string, args ...any) {
	fmt.Fprintf(c.Stdout, format+"\n", args...)
}
