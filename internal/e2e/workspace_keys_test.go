package e2e

// Operator keys through the command line and the API: the leaked-key
// drill, and scopes that never grow.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/audit"
	"github.com/consensus-md/consensus/internal/cli"
	"github.com/consensus-md/consensus/internal/workspace"
)

// consensusCLI runs the consensus command line in process against s with
// the credential token, and returns its exit status, stdout and stderr.
func (s *server) consensusCLI(t *testing.T, token string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := map[string]string{"CONSENSUS_URL": s.URL, "CONSENSUS_OPERATOR_TOKEN": token}
	code := cli.Main(args, cli.Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(""), Getenv: func(k string) string { return env[k] }})
	return code, out.String(), errb.String()
}

// TestLeakedKeyDrill is the runbook of a leaked key, with the command
// line: create a key, use it, revoke it, see its next use refused, and
// find all of it in the audit log, whose export verifies.
func TestLeakedKeyDrill(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.create("Drill", s.future())
	code, out, errOut := s.consensusCLI(t, operatorToken, "admin", "keys", "create", "--name", "ci reader", "--scope", "agreements:read", "--output", "json")
	if code != 0 {
		t.Fatalf("keys create: %d %s", code, errOut)
	}
	var k struct{ ID, Token string }
	if err := json.Unmarshal([]byte(out), &k); err != nil || !strings.HasPrefix(k.Token, "cok_") {
		t.Fatalf("keys create printed %s (%v)", out, err)
	}
	if code, _, errOut := s.consensusCLI(t, k.Token, "admin", "list", "--output", "json"); code != 0 {
		t.Fatalf("the new key cannot list: %d %s", code, errOut)
	}
	code, _, errOut = s.consensusCLI(t, k.Token, "admin", "create", "-f", "-")
	if code != 1 || !strings.Contains(errOut, "insufficient-scope") {
		t.Fatalf("a read-only key creating an agreement: exit %d, %s", code, errOut)
	}
	if code, out, errOut := s.consensusCLI(t, operatorToken, "admin", "keys", "list", "--output", "table"); code != 0 || !strings.Contains(out, "ci reader") || strings.Contains(out, k.Token) {
		t.Fatalf("keys list: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := s.consensusCLI(t, operatorToken, "admin", "keys", "revoke", k.ID, "--output", "table"); code != 0 || !strings.Contains(out, "revoked at") {
		t.Fatalf("keys revoke: %d %s %s", code, out, errOut)
	}
	code, _, errOut = s.consensusCLI(t, k.Token, "admin", "list")
	if code != 1 || !strings.Contains(errOut, "key-revoked") {
		t.Fatalf("the revoked key: exit %d, %s", code, errOut)
	}

	code, out, errOut = s.consensusCLI(t, operatorToken, "admin", "audit", "--all", "--output", "json")
	if code != 0 {
		t.Fatalf("admin audit: %d %s", code, errOut)
	}
	var actions []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e audit.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("admin audit line %q: %v", line, err)
		}
		actions = append(actions, fmt.Sprintf("%s %s:%s %s", e.Action, e.Actor.Kind, e.Actor.Name, e.Result))
		t.Logf("audit %d %s %s %s(%s) %v %s", e.Seq, e.At, e.Action, e.Actor.Kind, e.Actor.Name, e.Targets, e.Result)
	}
	want := []string{
		"agreement.create bootstrap:CONSENSUS_OPERATOR_TOKEN ok",
		"key.create bootstrap:CONSENSUS_OPERATOR_TOKEN ok",
		"agreement.create key:ci reader insufficient-scope",
		"key.revoke bootstrap:CONSENSUS_OPERATOR_TOKEN ok",
		"agreement.list key:ci reader key-revoked",
	}
	if strings.Join(actions, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit log:\n%s\nwant:\n%s", strings.Join(actions, "\n"), strings.Join(want, "\n"))
	}
	// The service filters: by actor (part of the name, any case), by action.
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"--actor", "CI READER"}, 2},
		{[]string{"--action", "key.create"}, 1},
		{[]string{"--action", "key.create", "--actor", "ci reader"}, 0},
	} {
		args := append([]string{"admin", "audit", "--output", "json"}, c.args...)
		code, got, errOut := s.consensusCLI(t, operatorToken, args...)
		if n := strings.Count(got, "\n"); code != 0 || n != c.want {
			t.Errorf("admin audit %v: exit %d, %d entries, want %d\n%s%s", c.args, code, n, c.want, got, errOut)
		}
	}
	if code, _, errOut := s.consensusCLI(t, operatorToken, "admin", "audit", "--agreement", "nope"); code != 2 || !strings.Contains(errOut, "--agreement") {
		t.Errorf("admin audit --agreement nope: exit %d, %s; want a usage error naming the flag", code, errOut)
	}
	file := t.TempDir() + "/audit.jsonl"
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := s.consensusCLI(t, "", "verify", "audit", file); code != 0 || !strings.HasPrefix(out, "ok: 5 entries") {
		t.Fatalf("verify audit: %d %s %s", code, out, errOut)
	}
	tampered := strings.Replace(out, `"result":"key-revoked"`, `"result":"ok"`, 1)
	if err := os.WriteFile(file, []byte(tampered), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := s.consensusCLI(t, "", "verify", "audit", file); code != 1 || !strings.Contains(errOut, "entry 5") {
		t.Fatalf("verify audit of a changed entry: %d %s", code, errOut)
	}
}

// TestKeyScopesNeverGrow: a key creates keys with at most its own scopes;
// names, scopes and expiries are checked; the list never shows a token and
// records each key's last use.
func TestKeyScopesNeverGrow(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	_, narrow := s.newKey(t, operatorToken, "key keeper", []workspace.Scope{workspace.KeysManage, workspace.AgreementsRead}, nil)
	r := s.do("POST", "/api/v1/admin/keys", bearer(narrow), map[string]any{"name": "wider", "scopes": []string{"agreements:read", "agreements:write"}})
	expect(t, r, 403, "insufficient-scope")
	if !strings.Contains(r.json(t)["detail"].(string), "agreements:write") {
		t.Fatalf("the refusal does not name the scope: %s", r.body)
	}
	_, same := s.newKey(t, narrow, "as narrow", []workspace.Scope{workspace.AgreementsRead, workspace.KeysManage}, nil)
	expect(t, s.do("GET", "/api/v1/admin/agreements", bearer(same), nil), 200, "")
	for name, body := range map[string]map[string]any{
		"unknown scope":  {"name": "k", "scopes": []string{"agreements:delete"}},
		"no scope":       {"name": "k", "scopes": []string{}},
		"blank name":     {"name": " ", "scopes": []string{"agreements:read"}},
		"two-line name":  {"name": "a\nb", "scopes": []string{"agreements:read"}},
		"past expiry":    {"name": "k", "scopes": []string{"agreements:read"}, "expiresAt": "2001-01-01T00:00:00Z"},
		"unknown member": {"name": "k", "scopes": []string{"agreements:read"}, "token": "cok_mine"},
	} {
		r := s.do("POST", "/api/v1/admin/keys", invalid(bearer(operatorToken)), body)
		if r.StatusCode != 400 {
			t.Errorf("%s: %d %s", name, r.StatusCode, r.body)
		}
	}
	r = s.do("GET", "/api/v1/admin/keys", bearer(operatorToken), nil)
	expect(t, r, 200, "")
	if bytes.Contains(r.body, []byte("cok_")) || bytes.Contains(r.body, []byte(`"token"`)) {
		t.Fatalf("the list shows a token: %s", r.body)
	}
	var l struct {
		Keys []struct {
			Name       string
			LastUsedAt *string
			CreatedBy  struct{ Kind string }
		}
	}
	if err := json.Unmarshal(r.body, &l); err != nil || len(l.Keys) != 2 {
		t.Fatalf("keys %s (%v)", r.body, err)
	}
	if l.Keys[0].LastUsedAt == nil || l.Keys[1].LastUsedAt == nil || l.Keys[0].CreatedBy.Kind != "bootstrap" || l.Keys[1].CreatedBy.Kind != "key" {
		t.Fatalf("keys %s", r.body)
	}
}
