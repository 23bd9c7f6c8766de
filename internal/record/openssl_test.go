package record

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOpenSSLAlone: conformance/verify-with-openssl.sh checks every
// revision's revision and terms digests, a command digest, a participant signature and the service
// signature with openssl pkeyutl -verify -rawin, sha256sum and python3's
// json module as the JCS encoder, and no code of ours. It accepts the valid
// vectors and names the check each mutation breaks.
func TestOpenSSLAlone(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "openssl", "python3", "sha256sum", "base64"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	cases := []struct {
		vector, fails string
	}{
		{"reached-unkeyed", ""}, // no participant signature: four checks
		{"reached-mixed", ""},
		{"disagreed", ""},
		{"no-consensus", ""},
		{"expired", ""},
		{"changed-body", "command-digest"},
		{"changed-body-resealed", "participant-signature"},
		{"swapped-key-resealed", "participant-signature"},
		{"forged-service-signature", "service-signature"},
		{"changed-revision", "revision-digest"},
		{"amended-same-terms", ""},
		{"amended-stale", ""},
		{"changed-terms-digest", "terms-digest"},
	}
	for _, c := range cases {
		cmd := exec.Command("bash", "../../conformance/verify-with-openssl.sh", c.vector+".record.json", "keys.jwks.json")
		cmd.Dir = vectorDir
		out, err := cmd.CombinedOutput()
		text := string(out)
		switch {
		case c.fails == "" && (err != nil || strings.Count(text, "ok   ")+strings.Count(text, "skip ") != 5):
			t.Errorf("%s: %v\n%s", c.vector, err, text)
		case c.fails != "" && (err == nil || !strings.Contains(text, "FAIL "+c.fails)):
			t.Errorf("%s: want FAIL %s, got %v\n%s", c.vector, c.fails, err, text)
		}
	}
}
