package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	consensus "github.com/consensus-md/consensus"
)

// TestPublishedVerifier: the verifier published at /tools/verify-record.mjs
// is the embedded file the conformance tests run, byte for byte, and the
// SHA-256 the capabilities document and llms-full.txt state is its own. A
// fresh Node process with nothing but the service's URLs downloads it,
// verifies a finished room's record against /.well-known/consensus-keys,
// sees one changed byte fail, and passes the published conformance vectors.
func TestPublishedVerifier(t *testing.T) {
	t.Parallel()
	s := startServer(t, servertestOptions(signingSeed))
	c := s.create("Kit room", s.future(), participantSpec{"Ada", "agent", true}, participantSpec{"Bo", "agent", true})
	ada, _ := s.joinKeyed(c.Participants[0].InvitationID, newKey("ada kit"))
	bo := s.agent(c.Participants[1].InvitationID).join()
	ada.say("decision-0001", "agree", "")
	expect(t, bo.post("decision-0002", "agree", ""), 201, "")

	v := s.do("GET", "/tools/verify-record.mjs", nil, nil)
	expect(t, v, 200, "")
	sum := sha256.Sum256(consensus.VerifyRecord)
	want := hex.EncodeToString(sum[:])
	if !bytes.Equal(v.body, consensus.VerifyRecord) || v.Header.Get("X-Consensus-SHA256") != want ||
		!strings.HasPrefix(v.Header.Get("Content-Type"), "text/javascript") || !strings.HasPrefix(v.Header.Get("Cache-Control"), "public") {
		t.Fatalf("served verifier: %d bytes, headers %v", len(v.body), v.Header)
	}
	expect(t, s.do("GET", "/tools/verify-record.mjs", map[string]string{"If-None-Match": v.Header.Get("ETag")}, nil), 304, "")
	llms := s.do("GET", "/llms-full.txt", nil, nil)
	if !bytes.Contains(llms.body, []byte(want)) {
		t.Errorf("llms-full.txt does not state the verifier's SHA-256 %s", want)
	}
	for _, name := range []string{"manifest.json", "reached-mixed.CONSENSUS.md"} {
		f := s.do("GET", "/conformance/"+name, nil, nil)
		expect(t, f, 200, "")
		disk, err := os.ReadFile("../../conformance/records/" + name)
		if err != nil || !bytes.Equal(f.body, disk) {
			t.Errorf("/conformance/%s is not the file the conformance tests read (%v)", name, err)
		}
	}
	expect(t, s.do("GET", "/conformance/nothing.json", nil, nil), 404, "not-found")

	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("this test runs a fresh Node process and needs Node.js 20+")
	}
	out, err := exec.Command(node, "testdata/kit-download.mjs", s.URL, s.agentPath(bo.inv.InvitationID, "record"),
		s.agentPath(bo.inv.InvitationID, "artifact"), bo.token, t.TempDir()).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	type run struct {
		Status int    `json:"status"`
		Out    string `json:"out"`
	}
	var got struct {
		VerifierSHA256, StatedSHA256 string
		IndexFilesMatch              bool
		Files                        int
		Original, Changed            run
		Conformance                  run
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.VerifierSHA256 != want || got.StatedSHA256 != want || !got.IndexFilesMatch || got.Files < 40 {
		t.Errorf("download: %+v", got)
	}
	if got.Original.Status != 0 || !strings.HasSuffix(got.Original.Out, "RESULT: VERIFIED\n") {
		t.Errorf("the downloaded record did not verify:\n%s", got.Original.Out)
	}
	if got.Changed.Status != 1 || !strings.Contains(got.Changed.Out, "RESULT: FAILED") {
		t.Errorf("one changed byte verified (exit %d):\n%s", got.Changed.Status, got.Changed.Out)
	}
	if got.Conformance.Status != 0 || !strings.Contains(got.Conformance.Out, " vectors, 0 differ") {
		t.Errorf("the published vectors:\n%s", got.Conformance.Out)
	}
}
