package ingest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/consensus-md/consensus/internal/envelope"
)

func FuzzParseMessage(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "mail"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(readFixture(f, e.Name()))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		inv, err := ParseMessageBytes(raw, envelope.Policy{})
		if err == nil && (inv == nil || inv.Origin != envelope.DefaultOrigin || inv.Envelope.InviteURI != envelope.DefaultOrigin+"/invite/"+inv.InvitationID+"#secret="+inv.Secret) {
			t.Fatalf("accepted an invitation that fails the checks")
		}
	})
}
