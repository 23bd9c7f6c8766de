package ingest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/envelope/envelopetest"
)

func TestState(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	s, err := OpenState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode = %v, %v; want 0700", fi.Mode(), err)
	}
	if s.Seen(envelopetest.InvitationID) {
		t.Fatal("seen before record")
	}
	var none map[string]string
	if err := s.Load(envelopetest.InvitationID, &none); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("Load = %v, want ErrNotRecorded", err)
	}
	type rec struct {
		Status string `json:"status"`
		Token  string `json:"token"`
	}
	if err := s.Record(envelopetest.InvitationID, rec{Status: "exchanged", Token: "css_x"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(envelopetest.InvitationID, rec{Status: "claimed", Token: "csp_y"}); err != nil {
		t.Fatal(err)
	}
	if !s.Seen(envelopetest.InvitationID) || s.Seen(envelopetest.OtherID) {
		t.Fatal("Seen wrong after record")
	}
	var got rec
	if err := s.Load(envelopetest.InvitationID, &got); err != nil || got.Status != "claimed" || got.Token != "csp_y" {
		t.Fatalf("Load = %+v, %v", got, err)
	}
	p := filepath.Join(dir, envelopetest.InvitationID+".json")
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode = %v, %v; want 0600", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %d entries", len(entries))
	}
	// Ids that are not UUIDs cannot name files outside the directory.
	for _, bad := range []string{"../x", "", "ABC", strings.ToUpper(envelopetest.InvitationID)} {
		if err := s.Record(bad, rec{}); err == nil {
			t.Errorf("Record(%q) accepted", bad)
		}
		if s.Seen(bad) {
			t.Errorf("Seen(%q) = true", bad)
		}
	}
}

func TestStateNeverStoresCredentials(t *testing.T) {
	t.Parallel()
	inv, err := envelope.Parse(envelopetest.Valid(t), envelope.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenState(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// A careless caller recording the whole invitation still stores no
	// credential: the types redact themselves.
	if err := s.Record(inv.InvitationID, map[string]any{"invitation": inv, "envelope": inv.Envelope}); err != nil {
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
