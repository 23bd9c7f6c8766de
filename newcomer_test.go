package consensus_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMakeHelpAligned: every description of make help starts in one column.
func TestMakeHelpAligned(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is needed")
	}
	out, err := exec.Command("make", "--no-print-directory", "help").Output()
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "make" {
			t.Fatalf("make help line %q", line)
		}
		name := strings.Index(line, " "+f[1]+" ") + len(f[1]) + 1
		at := name + strings.Index(line[name:], f[2])
		if col == -1 {
			col = at
		}
		if at != col {
			t.Errorf("make help: %q starts its description at %d, the first line at %d", line, at, col)
		}
	}
}

// TestReadmeVersionStamping: what the README says about linker flags
// agrees with the Dockerfile's build.
func TestReadmeVersionStamping(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	docker, err := os.ReadFile("deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	const flag = "-X github.com/consensus-md/consensus/internal/cli/command.Stamp="
	if strings.Contains(string(docker), flag) && !strings.Contains(string(readme), flag) {
		t.Error("the Dockerfile stamps the version with a linker flag the README does not mention")
	}
	if strings.Contains(string(readme), "; no linker flags)") {
		t.Error("the README says version stamping uses no linker flags")
	}
}
