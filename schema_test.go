package consensus_test

import (
	"strings"
	"testing"

	"github.com/consensus-md/consensus"
)

// CompileSchemas compiles the embedded schemas it is given by $id, and
// refuses an $id that names no embedded schema.
func TestCompileSchemasTakesOnlyEmbeddedSchemas(t *testing.T) {
	t.Parallel()
	record := consensus.DocumentOrigin + "/schemas/consensus-record/v1"
	agreement := consensus.DocumentOrigin + "/schemas/agreement/v1"
	s, err := consensus.CompileSchemas(record, agreement)
	if err != nil || s[record] == nil || s[agreement] == nil {
		t.Fatalf("record with agreement: %v, %v", s, err)
	}
	for _, id := range []string{"https://example.com/schemas/agreement/v1", consensus.DocumentOrigin + "/schemas/nothing/v1"} {
		if _, err := consensus.CompileSchemas(id); err == nil || !strings.Contains(err.Error(), id) {
			t.Errorf("%s: %v, want an error naming it", id, err)
		}
	}
}
