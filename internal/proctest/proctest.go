// Package proctest runs real consensusd processes for black-box tests. It
// builds the binary from ./cmd/consensusd once per test process, starts
// replicas that share one database, token key, operator token, public origin
// and mail drop, signals them (SIGKILL, SIGTERM, SIGHUP), waits for their
// exit, restarts them on the same address and keeps their logs. It also runs a private PostgreSQL cluster (see
// Postgres) that a test may stop and freeze without disturbing the shared
// test cluster other packages use.
//
// A package that uses it calls proctest.Main from its TestMain so the built
// binary is removed when the tests end.
package proctest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

// Main runs the package's tests and removes what Binary built.
func Main(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// ModuleRoot is the directory holding the module's go.mod, found from the
// working directory (a test runs in its package's directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("proctest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Binary returns the path of a consensusd built with `go build` from this
// module's ./cmd/consensusd, building it on the first call of the process.
// PROCTEST_CONSENSUSD names a prebuilt binary to use instead (to judge
// another build with the same tests); every test that starts one logs it.
func Binary(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv("PROCTEST_CONSENSUSD"); bin != "" {
		tb.Logf("proctest: using PROCTEST_CONSENSUSD=%s, not a fresh build", bin)
		return bin
	}
	buildOnce.Do(func() {
		root, err := ModuleRoot()
		if err != nil {
			buildErr = err
			return
		}
		if buildDir, err = os.MkdirTemp("", "proctest-bin-"); err != nil {
			buildErr = err
			return
		}
		buildBin = filepath.Join(buildDir, "consensusd")
		cmd := exec.Command("go", "build", "-o", buildBin, "./cmd/consensusd")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/consensusd: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatalf("proctest: %v", buildErr)
	}
	return buildBin
}

// RandomHex returns n random bytes as hex (token keys and such).
func RandomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// Config is what every replica of a cluster shares. Zero fields take
// defaults: a random operator token and token key, origin
// http://localhost (clients address replicas directly, so the origin only
// names URLs in documents, envelopes and hashed objects), a Maildir under a
// temporary directory, rate limits off and a 50 ms outbox poll.
type Config struct {
	DatabaseURL   string
	Origin        string
	OperatorToken string
	TokenKey      string
	// Maildir is the mail drop (CONSENSUS_MAIL_URL=maildir://Maildir)
	// unless MailURL is set.
	Maildir string
	MailURL string
	// Env holds further settings (CONSENSUS_RATE_LIMIT=…, CONSENSUS_DB_TIMEOUT=…);
	// they override the defaults.
	Env map[string]string
	// Binary is the consensusd the replicas run; empty runs Binary's build.
	Binary string
}

// Cluster is a set of replicas started from one Config.
type Cluster struct {
	Config   Config
	Replicas []*Replica
	bin      string
	tb       testing.TB
}

// Start builds consensusd (once) and starts n replicas, each on a free
// loopback port, and stops them when the test ends.
func Start(tb testing.TB, cfg Config, n int) *Cluster {
	tb.Helper()
	if cfg.DatabaseURL == "" {
		tb.Fatal("proctest: Config.DatabaseURL is required")
	}
	if cfg.Origin == "" {
		cfg.Origin = "http://localhost"
	}
	if cfg.OperatorToken == "" {
		cfg.OperatorToken = "cso_" + RandomHex(24)
	}
	if cfg.TokenKey == "" {
		cfg.TokenKey = RandomHex(32)
	}
	if cfg.MailURL == "" && cfg.Maildir == "" {
		cfg.Maildir = filepath.Join(tb.TempDir(), "mail")
	}
	bin := cfg.Binary
	if bin == "" {
		bin = Binary(tb)
	}
	c := &Cluster{Config: cfg, bin: bin, tb: tb}
	for i := 0; i < n; i++ {
		c.Add(tb)
	}
	return c
}

// Add starts one more replica.
func (c *Cluster) Add(tb testing.TB) *Replica {
	tb.Helper()
	r := &Replica{Index: len(c.Replicas), cluster: c, listen: "127.0.0.1:0"}
	c.Replicas = append(c.Replicas, r)
	tb.Cleanup(func() { r.kill() })
	r.start(tb)
	return r
}

// URLs returns the base URL of every replica (http://127.0.0.1:port).
func (c *Cluster) URLs() []string {
	out := make([]string, len(c.Replicas))
	for i, r := range c.Replicas {
		out[i] = r.URL()
	}
	return out
}

func (c *Cluster) env(listen string) []string {
	m := map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME"), "TZ": "UTC",
		"CONSENSUS_ENV": "local", "DATABASE_URL": c.Config.DatabaseURL, "CONSENSUS_LISTEN": listen,
		"CONSENSUS_PUBLIC_ORIGIN": c.Config.Origin, "CONSENSUS_OPERATOR_TOKEN": c.Config.OperatorToken,
		"CONSENSUS_TOKEN_KEY": c.Config.TokenKey, "CONSENSUS_RATE_LIMIT": "0", "CONSENSUS_OUTBOX_POLL": "50ms",
		// Every replica has its own operations listener; a fixed port would
		// let only the first one start.
		"CONSENSUS_OPS_LISTEN": "127.0.0.1:0",
	}
	if c.Config.MailURL != "" {
		m["CONSENSUS_MAIL_URL"] = c.Config.MailURL
	} else {
		m["CONSENSUS_MAIL_URL"] = "maildir://" + c.Config.Maildir
	}
	for k, v := range c.Config.Env {
		m[k] = v
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(m))
	for _, k := range keys {
		out = append(out, k+"="+m[k])
	}
	return out
}
