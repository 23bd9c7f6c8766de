package consensusd

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

func run(env map[string]string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }})
	return code, out.String(), errb.String()
}

// TestConfigCheck: the effective configuration on stdout with secrets
// masked; every bad setting on stderr, one line each, naming it; exit 1.
func TestConfigCheck(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"CONSENSUS_ENV": "local", "DATABASE_URL": "postgres://u:db-password@localhost/x", "CONSENSUS_MAIL_URL": "maildir:///tmp/m",
		"CONSENSUS_OPERATOR_TOKEN": "cso_operator-token-long-enough", "CONSENSUS_TOKEN_KEY": strings.Repeat("ab", 32),
	}
	code, stdout, stderr := run(env, "config", "check")
	if code != 0 || stderr != "consensusd: configuration ok\n" || !regexp.MustCompile(`(?m)^CONSENSUS_PUBLIC_ORIGIN +http://localhost:8080 `).MatchString(stdout) {
		t.Fatalf("valid: exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	// An IP address works for agents but not for the console's passkeys:
	// a local run warns, naming the fix; production refuses it.
	env["CONSENSUS_PUBLIC_ORIGIN"] = "http://127.0.0.1:8080"
	code, _, stderr = run(env, "config", "check")
	if code != 0 || !strings.Contains(stderr, "consensusd: warning: CONSENSUS_PUBLIC_ORIGIN: ") || !strings.Contains(stderr, "set CONSENSUS_PUBLIC_ORIGIN=http://localhost:8080") {
		t.Fatalf("an IP origin locally: exit %d, stderr %q", code, stderr)
	}
	prod := map[string]string{"DATABASE_URL": env["DATABASE_URL"], "CONSENSUS_MAIL_URL": "smtp://mail.example", "CONSENSUS_OPERATOR_TOKEN": env["CONSENSUS_OPERATOR_TOKEN"],
		"CONSENSUS_TOKEN_KEY": env["CONSENSUS_TOKEN_KEY"], "CONSENSUS_PUBLIC_ORIGIN": "https://192.0.2.7"}
	if code, _, stderr := run(prod, "config", "check"); code != 1 || !strings.Contains(stderr, "consensusd: CONSENSUS_PUBLIC_ORIGIN: the console's passkeys (WebAuthn) cannot work at https://192.0.2.7") {
		t.Fatalf("an IP origin in production: exit %d, stderr %q", code, stderr)
	}
	delete(env, "CONSENSUS_PUBLIC_ORIGIN")
	for _, secret := range []string{"db-password", "cso_operator", strings.Repeat("ab", 32)} {
		if strings.Contains(stdout, secret) {
			t.Errorf("config check shows a secret:\n%s", stdout)
		}
	}
	env["CONSENSUS_RATE_LIMIT"], env["CONSENSUS_OUTBOX_POLL"] = "many", "soon"
	code, _, stderr = run(env, "config", "check")
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if code != 1 || len(lines) != 2 || !strings.HasPrefix(lines[0], "consensusd: CONSENSUS_RATE_LIMIT: ") || !strings.HasPrefix(lines[1], "consensusd: CONSENSUS_OUTBOX_POLL: ") {
		t.Fatalf("invalid: exit %d, stderr:\n%s", code, stderr)
	}
}

// TestServeRefusesBadSettings: the service names the setting and exits 1
// before touching the database.
func TestServeRefusesBadSettings(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := run(nil)
	if code != 1 || stdout != "" || stderr != "consensusd: DATABASE_URL: required (or DATABASE_URL_FILE): a PostgreSQL 14+ connection URL\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := run(nil, "migrate"); code != 1 || !strings.HasPrefix(stderr, "consensusd: DATABASE_URL: required") {
		t.Fatalf("migrate: exit %d, %q", code, stderr)
	}
}

// TestHelpListsEverySetting: consensusd --help shows the settings table.
func TestHelpListsEverySetting(t *testing.T) {
	t.Parallel()
	code, stdout, _ := run(nil, "--help")
	for _, want := range []string{"DATABASE_URL\n      required; secret: or DATABASE_URL_FILE", "CONSENSUS_TOKEN_KEY_FILE", "CONSENSUS_OPERATOR_TOKEN_FILE", "CONSENSUS_SMTP_PASSWORD_FILE", "CONSENSUS_PUBLIC_ORIGIN", "CONSENSUS_MAIL_URL", "default: 120"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}
