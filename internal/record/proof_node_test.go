package record

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	consensus "github.com/consensus-md/consensus"
)

// TestNodeVerifierProofFlags runs the Node verifier's command line with
// --proof, as published and as source: where the log key comes from, the
// default count of witnesses and the usage errors, as consensus verify
// record takes them.
func TestNodeVerifierProofFlags(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is required: the second verifier is a Node program")
	}
	m := readManifest(t)
	var good, tooFew ProofVector
	for _, v := range m.Proofs {
		switch v.Name {
		case "proof-two-witnesses":
			good = v
		case "proof-too-few-cosignatures":
			tooFew = v
		}
	}
	dir := t.TempDir()
	jwks := string(readVectorFile(t, "keys.jwks.json"))
	doc := strings.Replace(jwks, `{"keys":`, `{"log":{"origin":"`+proofOrigin+`","verifierKey":"`+good.LogKey+`","checkpoint":"https://consensus.example/log/checkpoint"},"keys":`, 1)
	keysDoc := filepath.Join(dir, "consensus-keys.json")
	bundle := filepath.Join(dir, "verify-record.mjs")
	if doc == jwks || os.WriteFile(keysDoc, []byte(doc), 0o644) != nil || os.WriteFile(bundle, consensus.VerifyRecord, 0o644) != nil {
		t.Fatal("cannot write the keys document or the bundle")
	}
	v := func(name string) string { return filepath.Join(vectorDir, name) }
	w1, w2 := good.Witnesses[0], good.Witnesses[1]
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"log key from the keys document", []string{v(good.Record), "--keys", keysDoc, "--proof", v(good.Proof), "--witness", w1, "--witness", w2}, 0,
			"RESULT: VERIFIED\n"},
		{"--log-key, --witnesses 1 of 2", []string{v(tooFew.Record), "--proof", v(tooFew.Proof), "--log-key", good.LogKey, "--witness", w1, "--witness", w2, "--witnesses", "1"}, 0,
			"PROOF: VERIFIED: leaf 4 of 7 in consensus.example/log, cosigned by witness.example/one\n"},
		{"every --witness wanted by default", []string{v(tooFew.Record), "--keys", keysDoc, "--proof", v(tooFew.Proof), "--witness", w1, "--witness", w2}, 1,
			"PROOF: FAILED (cosignatures)\n"},
		{"the record fails too", []string{v("changed-body.record.json"), "--keys", keysDoc, "--proof", v(good.Proof)}, 1, "FAIL leaf-matches-record"},
		{"no log key", []string{v(good.Record), "--keys", v("keys.jwks.json"), "--proof", v(good.Proof)}, 2, "--log-key VKEY"},
		{"--witness without --proof", []string{v(good.Record), "--witness", w1}, 2, "check a --proof"},
		{"more cosignatures than witnesses", []string{v(good.Record), "--keys", keysDoc, "--proof", v(good.Proof), "--witness", w1, "--witnesses", "2"}, 2, "--witnesses 2"},
		{"a malformed --witness", []string{v(good.Record), "--keys", keysDoc, "--proof", v(good.Proof), "--witness", "one=AAAA"}, 2, "one=AAAA"},
	} {
		for _, script := range []string{bundle, "../../tools/verify-record.mjs"} {
			out, err := exec.Command(node, append([]string{script}, tc.args...)...).CombinedOutput()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(string(out), tc.want) {
				t.Errorf("%s (%s): exit %d, want %d with %q\n%s", tc.name, filepath.Base(script), code, tc.code, tc.want, out)
			}
		}
	}
}
