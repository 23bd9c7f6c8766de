package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func base() map[string]string {
	return map[string]string{
		"DATABASE_URL": "postgres:///consensus", "CONSENSUS_PUBLIC_ORIGIN": "https://consensus.example",
		"CONSENSUS_OPERATOR_TOKEN": "cso_operator-token-long-enough", "CONSENSUS_TOKEN_KEY": strings.Repeat("ab", 32),
		"CONSENSUS_MAIL_URL": "smtps://mailer@smtp.example", "CONSENSUS_SIGNING_KEY": strings.Repeat("5e", 32),
	}
}

func load(env map[string]string) (*Config, error) {
	return Load(func(k string) string { return env[k] })
}

func TestLoadProduction(t *testing.T) {
	t.Parallel()
	c, err := load(base())
	if err != nil {
		t.Fatal(err)
	}
	if c.Env != EnvProduction || c.Listen != "127.0.0.1:8080" || c.RateLimit != 120 || len(c.TokenKey) != 32 || c.DBTimeout != 5*time.Second {
		t.Fatalf("%+v", c)
	}
}

// TestLoadErrorsNameTheSetting: every refusal names the setting at fault
// and never echoes a secret value.
func TestLoadErrorsNameTheSetting(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		set     map[string]string
		setting string
	}{
		"http origin in production":   {map[string]string{"CONSENSUS_PUBLIC_ORIGIN": "http://consensus.example"}, "CONSENSUS_PUBLIC_ORIGIN"},
		"http loopback in production": {map[string]string{"CONSENSUS_PUBLIC_ORIGIN": "http://127.0.0.1:8080"}, "CONSENSUS_PUBLIC_ORIGIN"},
		"http non-loopback locally":   {map[string]string{"CONSENSUS_ENV": "local", "CONSENSUS_PUBLIC_ORIGIN": "http://consensus.example"}, "CONSENSUS_PUBLIC_ORIGIN"},
		"origin with a path":          {map[string]string{"CONSENSUS_PUBLIC_ORIGIN": "https://consensus.example/app"}, "CONSENSUS_PUBLIC_ORIGIN"},
		"no origin":                   {map[string]string{"CONSENSUS_PUBLIC_ORIGIN": ""}, "CONSENSUS_PUBLIC_ORIGIN"},
		"no database":                 {map[string]string{"DATABASE_URL": ""}, "DATABASE_URL"},
		"short key":                   {map[string]string{"CONSENSUS_TOKEN_KEY": "abcd"}, "CONSENSUS_TOKEN_KEY"},
		"bad key":                     {map[string]string{"CONSENSUS_TOKEN_KEY": "!!not-a-key!!"}, "CONSENSUS_TOKEN_KEY"},
		"no key":                      {map[string]string{"CONSENSUS_TOKEN_KEY": ""}, "CONSENSUS_TOKEN_KEY"},
		"short operator token":        {map[string]string{"CONSENSUS_OPERATOR_TOKEN": "short-secret"}, "CONSENSUS_OPERATOR_TOKEN"},
		"both token and file":         {map[string]string{"CONSENSUS_OPERATOR_TOKEN_FILE": "/nonexistent"}, "CONSENSUS_OPERATOR_TOKEN"},
		"mail scheme":                 {map[string]string{"CONSENSUS_MAIL_URL": "ftp://x"}, "CONSENSUS_MAIL_URL"},
		"rate limit":                  {map[string]string{"CONSENSUS_RATE_LIMIT": "-1"}, "CONSENSUS_RATE_LIMIT"},
		"room cache of nothing":       {map[string]string{"CONSENSUS_ROOM_CACHE_MB": "0"}, "CONSENSUS_ROOM_CACHE_MB"},
		"room cache in bytes":         {map[string]string{"CONSENSUS_ROOM_CACHE_MB": "48MiB"}, "CONSENSUS_ROOM_CACHE_MB"},
		"listen":                      {map[string]string{"CONSENSUS_LISTEN": "8080"}, "CONSENSUS_LISTEN"},
		"env":                         {map[string]string{"CONSENSUS_ENV": "staging"}, "CONSENSUS_ENV"},
		"database timeout":            {map[string]string{"CONSENSUS_DB_TIMEOUT": "5"}, "CONSENSUS_DB_TIMEOUT"},
		"database timeout too short":  {map[string]string{"CONSENSUS_DB_TIMEOUT": "10ms"}, "CONSENSUS_DB_TIMEOUT"},
		"database timeout too long":   {map[string]string{"CONSENSUS_DB_TIMEOUT": "5m"}, "CONSENSUS_DB_TIMEOUT"},
	}
	for name, c := range cases {
		env := base()
		for k, v := range c.set {
			env[k] = v
		}
		_, err := load(env)
		if err == nil || !strings.HasPrefix(err.Error(), c.setting) {
			t.Errorf("%s: error %v does not name %s", name, err, c.setting)
		}
		if err != nil && (strings.Contains(err.Error(), "short-secret") || strings.Contains(err.Error(), "!!not-a-key!!")) {
			t.Errorf("%s: error echoes a secret: %v", name, err)
		}
	}
}

func TestLocalDefaultsAndFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := filepath.Join(dir, "op")
	if err := os.WriteFile(tok, []byte("cso_from-a-file-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := base()
	env["CONSENSUS_ENV"], env["CONSENSUS_PUBLIC_ORIGIN"], env["CONSENSUS_OPERATOR_TOKEN"], env["CONSENSUS_OPERATOR_TOKEN_FILE"] = "local", "", "", tok
	env["CONSENSUS_RATE_LIMIT"] = "0"
	c, err := load(env)
	if err != nil {
		t.Fatal(err)
	}
	if c.PublicOrigin != "http://localhost:8080" || c.RateLimit != 0 || c.RoomCacheBytes != 48<<20 {
		t.Fatalf("%+v", c)
	}
}
