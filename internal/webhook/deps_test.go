package webhook

import (
	"os/exec"
	"strings"
	"testing"
)

// The rules here are shared with the consensus command, which verifies
// offline: neither links the database layer (package deliver, which does,
// is the daemon's).
func TestLinksNoDatabaseCode(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{".", "../../cmd/consensus"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/jackc/pgx") || strings.HasSuffix(dep, "/internal/store") {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}
