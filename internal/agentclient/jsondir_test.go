package agentclient

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/envelope/envelopetest"
)

func TestJSONDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	s, err := openJSONDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode = %v, %v; want 0700", fi.Mode(), err)
	}
	if s.has(envelopetest.InvitationID) {
		t.Fatal("has before save")
	}
	var none map[string]string
	if err := s.load(envelopetest.InvitationID, &none); !errors.Is(err, errNotRecorded) {
		t.Fatalf("load = %v, want errNotRecorded", err)
	}
	type rec struct {
		Status string `json:"status"`
		Token  string `json:"token"`
	}
	if err := s.save(envelopetest.InvitationID, rec{Status: "exchanged", Token: "css_x"}); err != nil {
		t.Fatal(err)
	}
	if err := s.save(envelopetest.InvitationID, rec{Status: "claimed", Token: "csp_y"}); err != nil {
		t.Fatal(err)
	}
	if !s.has(envelopetest.InvitationID) || s.has(envelopetest.OtherID) {
		t.Fatal("has wrong after save")
	}
	var got rec
	if err := s.load(envelopetest.InvitationID, &got); err != nil || got.Status != "claimed" || got.Token != "csp_y" {
		t.Fatalf("load = %+v, %v", got, err)
	}
	p := filepath.Join(dir, envelopetest.InvitationID+".json")
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode = %v, %v; want 0600", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %d entries", len(entries))
	}
	if ids, err := s.list(); err != nil || len(ids) != 1 || ids[0] != envelopetest.InvitationID {
		t.Fatalf("list = %v, %v", ids, err)
	}
	if err := s.save(envelopetest.OtherID, rec{}); err != nil {
		t.Fatal(err)
	}
	if err := s.remove(envelopetest.OtherID); err != nil || s.has(envelopetest.OtherID) {
		t.Fatalf("remove: %v", err)
	}
	if err := s.remove(envelopetest.OtherID); err != nil {
		t.Fatalf("removing a missing record: %v", err)
	}
	// Ids that are not UUIDs cannot name files outside the directory.
	for _, bad := range []string{"../x", "", "ABC", strings.ToUpper(envelopetest.InvitationID)} {
		if err := s.save(bad, rec{}); err == nil {
			t.Errorf("save(%q) accepted", bad)
		}
		if s.has(bad) {
			t.Errorf("has(%q) = true", bad)
		}
	}
}

func TestJSONDirNeverStoresCredentials(t *testing.T) {
	t.Parallel()
	inv, err := envelope.Parse(envelopetest.Valid(t), envelope.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := openJSONDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// A careless caller recording the whole invitation still stores no
	// credential: the types redact themselves.
	if err := s.save(inv.InvitationID, map[string]any{"invitation": inv, "envelope": inv.Envelope}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(s.dir, inv.InvitationID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	envelopetest.AssertNoLeak(t, string(data))
	if !strings.Contains(string(data), inv.InvitationID) {
		t.Fatal("record lost the identifiers")
	}
}
