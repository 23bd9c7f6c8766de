package kubernetes_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const unitPath = "../systemd/consensusd.service"

// unitSettings reads a unit file's active (uncommented) Key=Value lines.
func unitSettings(t *testing.T, raw []byte) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Errorf("unit line %q is not Key=Value", line)
			continue
		}
		out[k] = append(out[k], v)
	}
	return out
}

// TestSystemdUnit checks the hardening and the secret wiring of the unit, and
// has systemd itself verify it where systemd-analyze is installed.
func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	s := unitSettings(t, raw)
	for k, want := range map[string]string{
		"DynamicUser": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
		"PrivateDevices": "yes", "NoNewPrivileges": "yes", "CapabilityBoundingSet": "",
		"AmbientCapabilities": "", "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"RestrictNamespaces": "yes", "MemoryDenyWriteExecute": "yes", "LockPersonality": "yes",
		"SystemCallArchitectures": "native", "ProtectKernelTunables": "yes",
		"ProtectKernelModules": "yes", "ProtectControlGroups": "yes", "UMask": "0077",
		"EnvironmentFile": "/etc/consensus/consensusd.env",
	} {
		if got := s[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s=%q, want %q", k, got, want)
		}
	}
	if got := strings.Join(s["SystemCallFilter"], " | "); got != "@system-service | ~@privileged @resources" {
		t.Errorf("SystemCallFilter: %s", got)
	}
	// Every secret the service reads today comes from a credential through
	// its *_FILE setting; none sits in the environment.
	creds := map[string]bool{}
	for _, c := range s["LoadCredential"] {
		name, src, _ := strings.Cut(c, ":")
		creds[name] = true
		if !strings.HasPrefix(src, "/etc/consensus/credentials/") {
			t.Errorf("credential %s from %s, want /etc/consensus/credentials/", name, src)
		}
	}
	env := map[string]string{}
	for _, e := range s["Environment"] {
		k, v, _ := strings.Cut(e, "=")
		env[k] = v
	}
	for setting, cred := range map[string]string{
		"DATABASE_URL_FILE": "database-url", "CONSENSUS_OPERATOR_TOKEN_FILE": "operator-token",
		"CONSENSUS_TOKEN_KEY_FILE": "token-key",
	} {
		if env[setting] != "%d/"+cred || !creds[cred] {
			t.Errorf("%s=%q with credentials %v, want %%d/%s loaded from a file", setting, env[setting], creds, cred)
		}
	}
	for setting, cred := range map[string]string{"CONSENSUS_SMTP_PASSWORD_FILE": "smtp-password", "CONSENSUS_SIGNING_KEY_FILE": "signing-key"} {
		if !bytes.Contains(raw, []byte("LoadCredential="+cred+":")) || !bytes.Contains(raw, []byte(setting+"=%d/"+cred)) {
			t.Errorf("the unit does not show how to load %s for %s", cred, setting)
		}
	}
	for k := range env {
		if !strings.HasSuffix(k, "_FILE") {
			t.Errorf("Environment=%s: settings belong in the environment file, secrets in credentials", k)
		}
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: checked the unit's text only")
	}
	// verify insists that ExecStart exists; point it at a program that
	// does, and let any message at all fail the test (unknown keys and bad
	// values are only warnings to systemd).
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	unit := filepath.Join(dir, "consensusd.service")
	if err := os.WriteFile(unit, bytes.ReplaceAll(raw, []byte("/usr/local/bin/consensusd"), []byte(truePath)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(analyze, "security", "--offline=yes", "--no-pager", unit).CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for consensusd\.service: ([0-9.]+)`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	// 0 is a unit that can do nothing, 10 one that can do anything; what
	// remains here is what a network service needs (sockets, the host's
	// network).
	if score, _ := strconv.ParseFloat(string(m[1]), 64); score > 2.0 {
		t.Errorf("exposure %s, want at most 2.0:\n%s", m[1], out)
	}
}
