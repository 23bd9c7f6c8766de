package httpapi_test

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/httpapi"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/servertest"
)

// TestCapabilitiesDescribeRevisions: the capabilities document offers
// revisions with the rule in the documents' words and a terms digest
// example that an independent encoder (Python's json.dumps, when python3 is
// installed) and the service's canonical JSON agree on.
func TestCapabilitiesDescribeRevisions(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertest.Options{})
	var caps httpapi.Capabilities
	if err := json.Unmarshal(s.mustStatus(t, 200, http.MethodGet, "/.well-known/consensus-agent", nil), &caps); err != nil {
		t.Fatal(err)
	}
	rv := caps.Offered.Revisions
	if rv.Rule != room.RevisionEffect || strings.Join(rv.TermsDigestOf, ",") != "decision_rule,objective,rules,title" {
		t.Fatalf("revisions capability %+v", rv)
	}
	for _, n := range caps.NotOffered {
		if strings.Contains(n, "revision") {
			t.Fatalf("revisions are offered, yet notOffered lists %q", n)
		}
	}
	ex := rv.Example
	if canon.Digest([]byte(ex.Canonical)) != ex.TermsDigest || !strings.Contains(ex.Canonical, "<v2> & test") {
		t.Fatalf("example %+v", ex)
	}
	if d, _ := room.TermsDigest(room.Revision{Title: ex.Terms.Title, Objective: ex.Terms.Objective, Rules: ex.Terms.Rules, DecisionRule: ex.Terms.DecisionRule}); d != ex.TermsDigest {
		t.Fatalf("the example is not the terms digest of its terms: %s", d)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed; the independent encoder check is skipped")
	}
	terms, _ := json.Marshal(ex.Terms)
	out, err := exec.Command("python3", "-c", `import json,sys; sys.stdout.write(json.dumps(json.loads(sys.argv[1]), sort_keys=True, separators=(",", ":"), ensure_ascii=False))`, string(terms)).Output()
	if err != nil || string(out) != ex.Canonical {
		t.Fatalf("python3 encodes %s (%v), the service %s", out, err, ex.Canonical)
	}
}
