package consensusd

import (
	"regexp"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/pgtest"
)

// TestWorkspaceListAndOperatorLink: workspace list names each workspace
// with its counts (default among them); operator link prints a new link for an existing
// operator on a local run's localhost origin, withdrawing the unused one,
// and names the flag when the workspace or the operator is unknown.
func TestWorkspaceListAndOperatorLink(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.URL(t), "CONSENSUS_ENV": "local"}
	code, out, errOut := run(env, "workspace", "create", "--name", "acme", "--owner-email", "ops@acme.example", "--print-link")
	link := regexp.MustCompile(`(?m)^enroll\s+(http://localhost:8080/console/enroll#coe_[A-Za-z0-9_-]{43})$`).FindStringSubmatch(out)
	if code != 0 || link == nil {
		t.Fatalf("create on a local run: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = run(env, "workspace", "list")
	if code != 0 || !regexp.MustCompile(`(?m)^ID\s+NAME\s+CREATED\s+OPERATORS\s+AGREEMENTS$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^[0-9a-f-]{36}\s+acme\s+\S+Z\s+1\s+0$`).MatchString(out) || !regexp.MustCompile(`(?m)^[0-9a-f-]{36}\s+default\s`).MatchString(out) {
		t.Fatalf("list: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = run(env, "operator", "link", "--workspace", "acme", "--email", "Ops@Acme.example")
	again := regexp.MustCompile(`(?m)^enroll\s+(http://localhost:8080/console/enroll#coe_[A-Za-z0-9_-]{43})$`).FindStringSubmatch(out)
	if code != 0 || again == nil || again[1] == link[1] || !strings.Contains(errOut, "1 unused older link(s) withdrawn") {
		t.Fatalf("operator link: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := run(env, "operator", "link", "--workspace", "nope", "--email", "ops@acme.example"); code != 1 || !strings.Contains(errOut, "--workspace: no workspace is named") {
		t.Fatalf("unknown workspace: exit %d %s", code, errOut)
	}
	if code, _, errOut := run(env, "operator", "link", "--workspace", "acme", "--email", "who@acme.example"); code != 1 || !strings.Contains(errOut, "--email: who@acme.example is not an operator") {
		t.Fatalf("unknown operator: exit %d %s", code, errOut)
	}
	if code, _, errOut := run(env, "operator", "link", "--workspace", "acme"); code != 2 || !strings.Contains(errOut, "--email") {
		t.Fatalf("missing --email: exit %d %s", code, errOut)
	}
}
