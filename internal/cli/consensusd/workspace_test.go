package consensusd

import (
	"regexp"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/pgtest"
)

// TestWorkspaceCreate: a workspace with its owner, and an owner key
// printed once; a name in use and a bad address are refused; the owner's
// enrollment link is printed with --print-link (given an origin) or
// emailed when the token key and origin are set.
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
	if code != 2 || out != "" || !strings.Contains(errOut, "CONSENSUS_PUBLIC_ORIGIN") {
		t.Fatalf("--print-link without an origin: exit %d\n%s%s", code, out, errOut)
	}
	env["CONSENSUS_PUBLIC_ORIGIN"] = "https://venue.example"
	code, out, errOut = run(env, "workspace", "create", "--name", "linked", "--owner-email", "ops@linked.example", "--print-link")
	if code != 0 || !regexp.MustCompile(`(?m)^enroll\s+https://venue\.example/console/enroll#coe_[A-Za-z0-9_-]{43}$`).MatchString(out) {
		t.Fatalf("--print-link: exit %d\n%s%s", code, out, errOut)
	}
	env["CONSENSUS_TOKEN_KEY"] = strings.Repeat("ab", 32)
	code, out, errOut = run(env, "workspace", "create", "--name", "mailed", "--owner-email", "ops@mailed.example")
	if code != 0 || !strings.Contains(out, "emailed to ops@mailed.example") || strings.Contains(out, "coe_") {
		t.Fatalf("an emailed link: exit %d\n%s%s", code, out, errOut)
	}
}
