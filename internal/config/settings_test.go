package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTableRows: every row is documented and parsed, and a stated default
// is the value Load uses when the variable is unset.
func TestTableRows(t *testing.T) {
	t.Parallel()
	env := base()
	_, report := Inspect(func(k string) string { return env[k] })
	if err := report.Err(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, s := range Settings() {
		if s.Name == "" || s.Doc == "" || s.parse == nil || seen[s.Name] {
			t.Errorf("row %d (%s) lacks a name, doc or parse, or repeats a name", i, s.Name)
		}
		seen[s.Name] = true
		if s.Secret != (s.FileVariant() == s.Name+"_FILE") {
			t.Errorf("%s: FileVariant %q", s.Name, s.FileVariant())
		}
		e := report[i]
		if s.Default != "" && e.Source == SourceDefault && e.Value != s.Default {
			t.Errorf("%s: default %q documented, %q used", s.Name, s.Default, e.Value)
		}
	}
	for _, name := range []string{"DATABASE_URL", "CONSENSUS_OPERATOR_TOKEN", "CONSENSUS_TOKEN_KEY", "CONSENSUS_SMTP_PASSWORD"} {
		found := false
		for _, s := range Settings() {
			found = found || (s.Name == name && s.Secret)
		}
		if !found {
			t.Errorf("%s is not a secret row", name)
		}
	}
}

// TestInspectReportsEverySettingMasked: config check sees every error at
// once, names the setting in each, and never prints a secret.
func TestInspectReportsEverySettingMasked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("cd", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := base()
	env["CONSENSUS_TOKEN_KEY"], env["CONSENSUS_TOKEN_KEY_FILE"] = "", keyFile
	env["CONSENSUS_RATE_LIMIT"], env["CONSENSUS_LISTEN"] = "lots", "8080"
	env["CONSENSUS_MAIL_URL"] = "smtps://mailer:mail-password-secret@smtp.example"
	env["CONSENSUS_SMTP_PASSWORD"] = "smtp-password-secret"
	_, report := Inspect(func(k string) string { return env[k] })
	errs := report.Errs()
	if len(errs) != 2 || !strings.HasPrefix(errs[0].Error(), "CONSENSUS_LISTEN:") || !strings.HasPrefix(errs[1].Error(), "CONSENSUS_RATE_LIMIT:") {
		t.Fatalf("errors %v, want CONSENSUS_LISTEN then CONSENSUS_RATE_LIMIT", errs)
	}
	var out bytes.Buffer
	if err := report.Write(&out); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{env["CONSENSUS_OPERATOR_TOKEN"], strings.Repeat("cd", 32), "mail-password-secret", "smtp-password-secret", "postgres:///consensus"} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("the report shows a secret %q:\n%s", secret, out.String())
		}
	}
	for _, want := range []string{"CONSENSUS_TOKEN_KEY_FILE=" + keyFile, "CONSENSUS_MAIL_FROM", "default", "smtps://mailer:xxxxx@smtp.example", "(invalid)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(file, []byte("postgres:///from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL_FILE": file}
	if v, err := Lookup(func(k string) string { return env[k] }, "DATABASE_URL"); err != nil || v != "postgres:///from-file" {
		t.Fatalf("%q, %v", v, err)
	}
	if _, err := Lookup(func(string) string { return "" }, "DATABASE_URL"); err == nil || !strings.HasPrefix(err.Error(), "DATABASE_URL: required") {
		t.Fatalf("unset: %v", err)
	}
	if v, err := Lookup(func(string) string { return "" }, "CONSENSUS_LISTEN"); err != nil || v != "127.0.0.1:8080" {
		t.Fatalf("default: %q, %v", v, err)
	}
}

// TestConfigurationDocCurrent fails when docs/configuration.md no longer
// matches the settings table.
func TestConfigurationDocCurrent(t *testing.T) {
	t.Parallel()
	got, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, Markdown()) {
		t.Fatal("docs/configuration.md is stale: run `make generate` (go run ./internal/cli/gendocs) and commit it")
	}
}
