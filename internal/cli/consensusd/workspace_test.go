package consensusd

import (
	"regexp"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/pgtest"
)

// TestWorkspaceCreate: a workspace with its owner, and an owner key
// printed once; a name in use, a bad address and --print-link are refused
// (the last before anything is written, until enrollment links exist).
func TestWorkspaceCreate(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.URL(t)}
	code, out, errOut := run(env, "workspace", "create", "--name", "acme", "--owner-email", "Ops@Acme.example", "--key", "deploy")
	if code != 0 || !regexp.MustCompile(`(?m)^owner\s+ops@acme\.example\s`).MatchString(out) || !regexp.MustCompile(`(?m)^token\s+cok_[A-Za-z0-9_-]{43}$`).MatchString(out) ||
		!strings.Contains(errOut, "shown this once") {
		t.Fatalf("create: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(env, "workspace", "create", "--name", "plain", "--owner-email", "ops@plain.example"); code != 0 || strings.Contains(out, "cok_") {
		t.Fatalf("create without a key: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := run(env, "workspace", "create", "--name", "acme", "--owner-email", "other@acme.example"); code != 1 || !strings.Contains(errOut, `a workspace named "acme" exists`) {
		t.Fatalf("a name in use: exit %d %s", code, errOut)
	}
	if code, _, errOut := run(env, "workspace", "create", "--name", "bad", "--owner-email", "not an address"); code != 1 || !strings.Contains(errOut, "owner-email") {
		t.Fatalf("a bad address: exit %d %s", code, errOut)
	}
	code, out, errOut = run(env, "workspace", "create", "--name", "linked", "--owner-email", "ops@linked.example", "--print-link")
	if code != 2 || out != "" || !strings.Contains(errOut, "not available yet") {
		t.Fatalf("--print-link: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, _ := run(env, "workspace", "create", "--name", "linked", "--owner-email", "ops@linked.example"); code != 0 {
		t.Fatal("--print-link left the name taken")
	}
}
