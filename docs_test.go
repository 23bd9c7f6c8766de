package consensus_test

import (
	"regexp"
	"strings"
	"testing"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/canon"
)

// TestLLMsFullWorkedExample recomputes the digest recipe's worked example
// in llms-full.txt, so the published numbers stay true.
func TestLLMsFullWorkedExample(t *testing.T) {
	t.Parallel()
	raw, err := consensus.Web.ReadFile("web/llms-full.txt")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	m := regexp.MustCompile("(?s)Worked example.*?```json\n(.*?)\n```.*?```text\n(.*?)\n```.*?digest is `([0-9a-f]{64})`").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("llms-full.txt has no worked example in the expected shape")
	}
	got, err := canon.Transform([]byte(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != m[2] {
		t.Fatalf("canonical bytes differ:\n got %s\nwant %s", got, m[2])
	}
	if d := canon.Digest(got); d != m[3] {
		t.Fatalf("digest %s, document says %s", d, m[3])
	}
	md := regexp.MustCompile("bytes `# Ship` followed by one line feed hash to `([0-9a-f]{64})`; as an RFC 9530 header that is `Content-Digest: sha-256=:([^:]+):`").FindStringSubmatch(doc)
	if md == nil || canon.Digest([]byte("# Ship\n")) != md[1] || canon.DigestBase64([]byte("# Ship\n")) != md[2] {
		t.Fatalf("the Markdown example is wrong or missing: %v", md)
	}
	if !strings.Contains(doc, "ensure_ascii=False") {
		t.Fatal("the recipe no longer names the Python equivalent")
	}
}
