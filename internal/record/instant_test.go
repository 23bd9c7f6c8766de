package record

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/canon"
)

// Several instants the schema admits but time.Parse does not (a leap
// second): the report names the first in a fixed order (issued_at before
// revisions and events), the same one on every run.
func TestFormatNamesTheFirstBadInstant(t *testing.T) {
	t.Parallel()
	_, b, _ := scenarios[0].signed(t)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	leap := "2026-12-31T23:59:60Z"
	m["issued_at"] = leap
	obj(events(m)[0])["created_at"] = leap
	obj(obj(revisions(m)[0])["canonical"])["locked_at"] = leap
	bad, err := canon.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		var out strings.Builder
		_ = Verify(bad, Options{}).Write(&out)
		if !strings.Contains(out.String(), "/issued_at is not a valid RFC 3339 instant") {
			t.Fatalf("report:\n%s", out.String())
		}
	}
}
