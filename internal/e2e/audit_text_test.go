package e2e

import (
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/workspace"
)

// TestPathValuesThatAreNotIdsStayOutOfTheAuditLog: a key without the
// route's scope posts to an agreement path whose id is terminal escapes
// and a right-to-left override; the refusal is recorded, its targets hold
// no value that is not an id, and a well-formed id is recorded as sent.
func TestPathValuesThatAreNotIdsStayOutOfTheAuditLog(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	_, reader := s.newKey(t, operatorToken, "audit reader", []workspace.Scope{workspace.AuditRead}, nil)
	const hostile = "%1B%5B2J%1B%5B1;31mAUDIT%20WIPED%1B%5B0m%E2%80%AEdi-tnemeerga"
	const wellFormed = "0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"
	for _, id := range []string{hostile, strings.ToUpper(wellFormed), wellFormed} {
		r := s.do("POST", "/api/v1/admin/agreements/"+id+"/revisions", invalid(bearer(reader)), `{}`)
		expect(t, r, 403, "insufficient-scope")
	}
	var seen []string
	for _, e := range s.auditLog(t, reader) {
		if e.Result != "insufficient-scope" {
			continue
		}
		for k, v := range e.Targets {
			if k != "agreementId" || v != wellFormed {
				t.Errorf("entry %d: target %s = %q, want only well-formed ids", e.Seq, k, v)
			}
		}
		seen = append(seen, e.Targets["agreementId"])
	}
	if strings.Join(seen, ",") != ","+","+wellFormed {
		t.Errorf("the refusals' agreement ids: %q, want none, none, then %s", seen, wellFormed)
	}
}
