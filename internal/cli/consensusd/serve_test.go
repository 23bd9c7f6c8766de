package consensusd

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/config"
)

// production is a complete production configuration whose database is
// never reached by these tests.
func production() map[string]string {
	return map[string]string{
		"DATABASE_URL": "postgres://consensus@127.0.0.1:1/consensus", "CONSENSUS_PUBLIC_ORIGIN": "https://consensus.example",
		"CONSENSUS_OPERATOR_TOKEN": "cso_operator-token-long-enough", "CONSENSUS_TOKEN_KEY": strings.Repeat("ab", 32),
		"CONSENSUS_SIGNING_KEY": strings.Repeat("5e", 32), "CONSENSUS_MAIL_URL": "smtps://mailer@smtp.example",
	}
}

// TestStartRefusesEachSetting: for every setting of the table, a wrong or
// missing value stops `consensusd` with exit 1 and one line naming it,
// before anything is touched. A setting added to the table without a
// case here fails the test.
func TestStartRefusesEachSetting(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "missing")
	garbage := filepath.Join(t.TempDir(), "garbage")
	if err := os.WriteFile(garbage, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]map[string]string{
		"CONSENSUS_ENV":                    {"CONSENSUS_ENV": "staging"},
		"DATABASE_URL":                     {"DATABASE_URL": ""},
		"CONSENSUS_DB_TIMEOUT":             {"CONSENSUS_DB_TIMEOUT": "2h"},
		"CONSENSUS_LISTEN":                 {"CONSENSUS_LISTEN": "8080"},
		"CONSENSUS_PUBLIC_ORIGIN":          {"CONSENSUS_PUBLIC_ORIGIN": "http://consensus.example"},
		"CONSENSUS_OPERATOR_TOKEN":         {"CONSENSUS_OPERATOR_TOKEN": ""},
		"CONSENSUS_TOKEN_KEY":              {"CONSENSUS_TOKEN_KEY": ""},
		"CONSENSUS_MAIL_URL":               {"CONSENSUS_MAIL_URL": "maildir:///var/mail/consensus"},
		"CONSENSUS_SMTP_PASSWORD":          {"CONSENSUS_SMTP_PASSWORD_FILE": missing},
		"CONSENSUS_RATE_LIMIT":             {"CONSENSUS_RATE_LIMIT": "lots"},
		"CONSENSUS_ROOM_CACHE_MB":          {"CONSENSUS_ROOM_CACHE_MB": "0"},
		"CONSENSUS_OUTBOX_POLL":            {"CONSENSUS_OUTBOX_POLL": "soon"},
		"CONSENSUS_TLS_CERT_FILE":          {"CONSENSUS_TLS_CERT_FILE": garbage, "CONSENSUS_TLS_KEY_FILE": garbage},
		"CONSENSUS_TLS_KEY_FILE":           {"CONSENSUS_TLS_CERT_FILE": missing},
		"CONSENSUS_TRUSTED_PROXIES":        {"CONSENSUS_TRUSTED_PROXIES": "the load balancer"},
		"CONSENSUS_READ_HEADER_TIMEOUT":    {"CONSENSUS_READ_HEADER_TIMEOUT": "0"},
		"CONSENSUS_READ_TIMEOUT":           {"CONSENSUS_READ_TIMEOUT": "1s"},
		"CONSENSUS_WRITE_TIMEOUT":          {"CONSENSUS_WRITE_TIMEOUT": "never"},
		"CONSENSUS_IDLE_TIMEOUT":           {"CONSENSUS_IDLE_TIMEOUT": "2d"},
		"CONSENSUS_OPS_LISTEN":             {"CONSENSUS_OPS_LISTEN": "9090"},
		"CONSENSUS_PPROF":                  {"CONSENSUS_PPROF": "on please"},
		"CONSENSUS_SHUTDOWN_DELAY":         {"CONSENSUS_SHUTDOWN_DELAY": "-1s"},
		"CONSENSUS_SHUTDOWN_GRACE":         {"CONSENSUS_SHUTDOWN_GRACE": "1h"},
		"CONSENSUS_SIGNING_KEY":            {"CONSENSUS_SIGNING_KEY": ""},
		"CONSENSUS_WEBHOOK_ALLOW_LOOPBACK": {"CONSENSUS_WEBHOOK_ALLOW_LOOPBACK": "true"},
		"CONSENSUS_WEBHOOK_CA_FILE":        {"CONSENSUS_WEBHOOK_CA_FILE": garbage},
		"CONSENSUS_REPLY_ADDRESS":          {"CONSENSUS_REPLY_ADDRESS": "Replies <replies@consensus.example>"},
		"CONSENSUS_REPLY_IMAP_URL":         {"CONSENSUS_REPLY_ADDRESS": "replies@consensus.example"},
		"CONSENSUS_REPLY_IMAP_PASSWORD":    {"CONSENSUS_REPLY_IMAP_PASSWORD_FILE": missing},
		"CONSENSUS_DNS_RESOLVER":           {"CONSENSUS_DNS_RESOLVER": "127.0.0.1"},
		"CONSENSUS_LOG_KEY":                {"CONSENSUS_LOG_KEY": "!!not-a-key!!"},
		"CONSENSUS_LOG_ORIGIN":             {"CONSENSUS_LOG_ORIGIN": "https://consensus.example/log"},
		"CONSENSUS_LOG_INTERVAL":           {"CONSENSUS_LOG_INTERVAL": "soon"},
		"CONSENSUS_LOG_WITNESSES":          {"CONSENSUS_LOG_WITNESSES": "witness.example/w1"},
		"CONSENSUS_PARKED_CONNECTIONS":     {"CONSENSUS_PARKED_CONNECTIONS": "maybe"},
	}
	// Settings no value can make wrong.
	free := map[string]bool{"CONSENSUS_MAIL_FROM": true}
	for _, s := range config.Settings() {
		set, ok := cases[s.Name]
		if !ok {
			if !free[s.Name] {
				t.Errorf("%s: no refusal case", s.Name)
			}
			continue
		}
		env := production()
		for k, v := range set {
			env[k] = v
		}
		code, stdout, stderr := run(env)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		// The missing key is named by its pair; a missing _FILE by its variable.
		named := s.Name
		if s.Name == "CONSENSUS_TLS_KEY_FILE" {
			named = "CONSENSUS_TLS_CERT_FILE"
		}
		if code != 1 || stdout != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], "consensusd: "+named) {
			t.Errorf("%s: exit %d, stderr %q", s.Name, code, stderr)
		}
	}
}

// TestStartRefusesTakenPorts: a port in use stops the start, naming the
// setting, before the database is reached (it is unreachable here).
func TestStartRefusesTakenPorts(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, setting := range []string{"CONSENSUS_OPS_LISTEN", "CONSENSUS_LISTEN"} {
		env := production()
		env["CONSENSUS_LISTEN"], env["CONSENSUS_OPS_LISTEN"] = "127.0.0.1:0", "127.0.0.1:0"
		env[setting] = taken.Addr().String()
		code, _, stderr := run(env)
		if code != 1 || !strings.HasPrefix(stderr, "consensusd: "+setting+": ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s taken: exit %d, stderr %q", setting, code, stderr)
		}
	}
}

// TestHealthcheck: exit 0 on a 200 from /livez (or /readyz with --ready)
// that names consensusd, 1 otherwise; an unspecified listen host is asked
// on loopback.
func TestHealthcheck(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/livez" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, `{"status":"live","service":"consensusd"}`)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	env := map[string]string{"CONSENSUS_OPS_LISTEN": "0.0.0.0:" + port}
	if code, _, stderr := run(env, "healthcheck"); code != 0 {
		t.Fatalf("live: exit %d, %s", code, stderr)
	}
	if code, _, stderr := run(env, "healthcheck", "--ready"); code != 1 || !strings.Contains(stderr, "/readyz answered 503") {
		t.Fatalf("not ready: exit %d, %q", code, stderr)
	}
	srv.Close()
	if code, _, _ := run(env, "healthcheck"); code != 1 {
		t.Fatalf("nothing listening: exit %d", code)
	}
	if code, _, stderr := run(map[string]string{"CONSENSUS_OPS_LISTEN": "nine"}, "healthcheck"); code != 1 || !strings.Contains(stderr, "CONSENSUS_OPS_LISTEN") {
		t.Fatalf("bad setting: exit %d, %q", code, stderr)
	}
}

// TestHealthcheckOtherService: another program on the operations port
// (Prometheus answers 200 on /livez-like paths too) is not consensusd, so
// the check fails and says so.
func TestHealthcheckOtherService(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"prometheus":    "Prometheus Server is Healthy.\n",
		"other json":    `{"status":"live"}`,
		"other service": `{"status":"live","service":"prometheus"}`,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, body)
		}))
		env := map[string]string{"CONSENSUS_OPS_LISTEN": srv.Listener.Addr().String()}
		code, _, stderr := run(env, "healthcheck")
		srv.Close()
		if code != 1 || !strings.Contains(stderr, "not consensusd") {
			t.Errorf("%s: exit %d, stderr %q", name, code, stderr)
		}
	}
}

// TestConfigCheckSaysWhichSettings: without CONSENSUS_ENV, config check
// says it checks production's settings, not make run's.
func TestConfigCheckSaysWhichSettings(t *testing.T) {
	t.Parallel()
	_, _, stderr := run(map[string]string{}, "config", "check")
	if !strings.Contains(stderr, "not make run's (deploy/local/run.sh check") {
		t.Fatalf("stderr %q", stderr)
	}
	_, _, stderr = run(map[string]string{"CONSENSUS_ENV": "local"}, "config", "check")
	if strings.Contains(stderr, "make run") {
		t.Fatalf("with CONSENSUS_ENV set: %q", stderr)
	}
}
