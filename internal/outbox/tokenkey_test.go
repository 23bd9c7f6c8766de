package outbox_test

import (
	"crypto/rand"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/secret"
)

// TestChangedTokenKeyReply: mail sealed under one token key and sent by a
// worker holding another is failed for good with the reply the token-key
// runbook in docs/operations.md quotes, so an operator can search for it.
func TestChangedTokenKeyReply(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`marks it\s+` + "`failed`" + ` with a reply that begins\s+"([^"]+)"`).FindSubmatch(doc)
	if m == nil {
		t.Fatal("the token-key runbook quotes no reply")
	}
	quoted := strings.Join(strings.Fields(string(m[1])), " ")

	f := newFixture(t)
	c := f.agreement(t, 1)
	w := f.worker(t)
	master := make([]byte, 32)
	_, _ = rand.Read(master)
	if w.Keys, err = secret.DeriveKeys(master); err != nil {
		t.Fatal(err)
	}
	f.run(t, w)
	d := f.waitFor(t, c.AgreementID)
	if d[0].State != "failed" || d[0].LastReply == nil || !strings.HasPrefix(*d[0].LastReply, quoted) {
		t.Fatalf("state %s, reply %v; the runbook says it begins %q", d[0].State, *d[0].LastReply, quoted)
	}
}
