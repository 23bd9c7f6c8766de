package audit_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/consensus-md/consensus/internal/audit"
	"github.com/consensus-md/consensus/internal/canon"
)

func chain(t *testing.T, n int) []audit.Entry {
	t.Helper()
	prev := canon.ZeroHash
	var out []audit.Entry
	for i := 1; i <= n; i++ {
		e := audit.Entry{WorkspaceID: "00000000-0000-0000-0000-000000000001", Seq: int64(i), ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
			At: "2026-12-04T08:00:00.000000Z", Actor: audit.Actor{Kind: "key", ID: "k", Name: "ci <deploy>"}, Action: "agreement.create",
			Targets: map[string]string{"agreementId": fmt.Sprint(i)}, RequestID: "r", ClientAddress: "127.0.0.1", Result: "ok", Prev: prev}
		h, err := audit.Hash(e)
		if err != nil {
			t.Fatal(err)
		}
		e.Hash, prev = h, h
		out = append(out, e)
	}
	return out
}

func TestVerifyChain(t *testing.T) {
	t.Parallel()
	entries := chain(t, 4)
	head, err := audit.Verify(entries)
	if err != nil || head != entries[3].Hash {
		t.Fatalf("Verify = %q, %v; want the last hash", head, err)
	}
	// A suffix verifies on its own: its first prev is taken on trust.
	if _, err := audit.Verify(entries[2:]); err != nil {
		t.Fatalf("suffix: %v", err)
	}
	breaks := map[string]func(es []audit.Entry){
		"changed result":   func(es []audit.Entry) { es[1].Result = "insufficient-scope" },
		"changed actor":    func(es []audit.Entry) { es[2].Actor.Name = "someone else" },
		"changed target":   func(es []audit.Entry) { es[0].Targets["agreementId"] = "x" },
		"added target":     func(es []audit.Entry) { es[3].Targets["keyId"] = "x" },
		"reordered":        func(es []audit.Entry) { es[1], es[2] = es[2], es[1] },
		"first prev":       func(es []audit.Entry) { es[0].Prev = es[3].Hash },
		"other workspace":  func(es []audit.Entry) { es[2].WorkspaceID = "00000000-0000-0000-0000-000000000002" },
		"rehashed changed": func(es []audit.Entry) { es[1].Action = "key.revoke"; es[1].Hash, _ = audit.Hash(es[1]) },
	}
	for name, change := range breaks {
		es := chain(t, 4)
		change(es)
		if _, err := audit.Verify(es); !errors.Is(err, audit.ErrBroken) {
			t.Errorf("%s: Verify = %v, want ErrBroken", name, err)
		}
	}
	dropped := append(chain(t, 4)[:1:1], chain(t, 4)[2:]...)
	if _, err := audit.Verify(dropped); !errors.Is(err, audit.ErrBroken) {
		t.Errorf("dropped entry: Verify = %v, want ErrBroken", err)
	}
}
