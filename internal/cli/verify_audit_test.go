package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/audit"
)

// auditLines returns a chain of two entries as `consensus admin audit --all
// --output json` writes it, one per line; the second is a key.revoke
// with no targets.
func auditLines(t *testing.T) []string {
	t.Helper()
	prev := strings.Repeat("0", 64)
	var lines []string
	for i, action := range []string{"key.create", "key.revoke"} {
		e := audit.Entry{WorkspaceID: "00000000-0000-0000-0000-000000000001", Seq: int64(i + 1), ID: "0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5" + string(rune('0'+i)),
			At: "2026-01-01T00:00:00.000000Z", Actor: audit.Actor{Kind: "key", ID: "k", Name: "ci"}, Action: action,
			Targets: map[string]string{}, RequestID: "r", ClientAddress: "127.0.0.1", Result: "ok", Prev: prev}
		h, err := audit.Hash(e)
		if err != nil {
			t.Fatal(err)
		}
		e.Hash, prev = h, h
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	return lines
}

// TestVerifyAuditRefusesBytesItDidNotHash: verify audit reads each entry
// as jq or Python would, or refuses it: a member twice, a member whose
// name differs from a real one only by case, and a member no entry has are
// refused in every form of export (lines, an array, a page), even when the
// hash of what encoding/json would have read matches.
func TestVerifyAuditRefusesBytesItDidNotHash(t *testing.T) {
	lines := auditLines(t)
	second := lines[1]
	tampered := map[string]string{
		// jq reads agreement.create; a case-insensitive reader key.revoke.
		"case-folded":    strings.Replace(second, `"action":"key.revoke"`, `"action":"agreement.create"`, 1)[:len(second)-len(`}`)+len(`agreement.create`)-len(`key.revoke`)] + `,"Action":"key.revoke"}`,
		"duplicate":      strings.Replace(second, `"action":"key.revoke"`, `"action":"agreement.create","action":"key.revoke"`, 1),
		"unknown":        strings.TrimSuffix(second, "}") + `,"note":"hidden"}`,
		"nested unknown": strings.Replace(second, `"actor":{`, `"actor":{"email":"x@y.z",`, 1),
		"null":           strings.Replace(second, `"result":"ok"`, `"result":"ok","targets":null`, 1),
	}
	forms := map[string]func(a, b string) string{
		"lines": func(a, b string) string { return a + "\n" + b + "\n" },
		"array": func(a, b string) string { return "[" + a + "," + b + "]" },
		"page":  func(a, b string) string { return `{"entries":[` + a + "," + b + `],"nextAfter":null}` },
	}
	for form, join := range forms {
		if code, out := runCLI("verify", "audit", write(t, "audit.json", join(lines[0], second))); code != 0 || !strings.HasPrefix(out, "ok: 2 entries") {
			t.Fatalf("%s: the untouched export: exit %d %s", form, code, out)
		}
		for what, line := range tampered {
			code, out := runCLI("verify", "audit", write(t, "audit.json", join(lines[0], line)))
			if code != 1 || strings.HasPrefix(out, "ok") {
				t.Errorf("%s, %s member: exit %d %s, want refused", form, what, code, out)
			}
		}
	}
}
