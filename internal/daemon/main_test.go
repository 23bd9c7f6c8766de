package daemon_test

import (
	"testing"

	"github.com/consensus-md/consensus/internal/proctest"
)

// The tests that run the real binary start it through proctest, which
// builds consensusd once for the whole package and removes it at the end.
func TestMain(m *testing.M) { proctest.Main(m) }
