package consensus_test

import (
	"os"
	"strings"
	"testing"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/room"
)

// TestDocsStateWhatARevisionDoes: llms-full.txt, openapi.json and the
// README say what a revision does to an agent's decision in the same two
// sentences the capabilities document serves (room.RevisionEffect).
func TestDocsStateWhatARevisionDoes(t *testing.T) {
	t.Parallel()
	llms, err := consensus.Web.ReadFile("web/llms-full.txt")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	// openapi.json holds the sentences JSON-escaped; its backticks and
	// parentheses need no escaping, so the text appears as is.
	for name, doc := range map[string]string{"web/llms-full.txt": string(llms), "README.md": string(readme), "openapi.json": string(consensus.OpenAPI)} {
		if !strings.Contains(strings.Join(strings.Fields(doc), " "), room.RevisionEffect) {
			t.Errorf("%s does not state room.RevisionEffect word for word", name)
		}
	}
	if strings.Contains(string(llms), "revision 2 of an agreement") || strings.Contains(string(llms), "always 1 in this version") {
		t.Error("llms-full.txt still says revisions are not offered")
	}
}
