package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const vectors = "../../conformance/records"

type proofVector struct {
	Name            string   `json:"name"`
	Record          string   `json:"record"`
	Proof           string   `json:"proof"`
	LogKey          string   `json:"logKey"`
	Witnesses       []string `json:"witnesses"`
	MinCosignatures int      `json:"minCosignatures"`
	Expect          []string `json:"expect"`
}

func proofVectors(t *testing.T) []proofVector {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectors, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Proofs []proofVector `json:"proofs"`
	}
	if err := json.Unmarshal(b, &m); err != nil || len(m.Proofs) < 8 {
		t.Fatalf("manifest proofs: %d, %v", len(m.Proofs), err)
	}
	return m.Proofs
}

func vec(name string) string { return filepath.Join(vectors, name) }

// TestVerifyRecordProofVectors runs consensus verify record --proof over
// every proof vector: exit 0 and PROOF: VERIFIED when it expects nothing
// to fail, else exit 1 with a FAIL line for each check it names, and no
// other.
func TestVerifyRecordProofVectors(t *testing.T) {
	t.Parallel()
	for _, v := range proofVectors(t) {
		args := []string{"verify", "record", vec(v.Record), "--keys", vec("keys.jwks.json"), "--proof", vec(v.Proof),
			"--log-key", v.LogKey, "--witnesses", strconv.Itoa(v.MinCosignatures)}
		for _, w := range v.Witnesses {
			args = append(args, "--witness", w)
		}
		code, out := runCLI(args...)
		if len(v.Expect) == 0 {
			if code != 0 || !strings.Contains(out, "RESULT: VERIFIED\n") || !strings.Contains(out, "\nPROOF: VERIFIED: ") {
				t.Errorf("%s: exit %d\n%s", v.Name, code, out)
			}
			for _, c := range []string{"leaf", "leaf-matches-record", "log-signature", "inclusion", "cosignatures"} {
				if !strings.Contains(out, "\nok   "+c+": ") {
					t.Errorf("%s: no ok line for %s\n%s", v.Name, c, out)
				}
			}
			continue
		}
		if code != 1 || !strings.Contains(out, "\nPROOF: FAILED ("+strings.Join(v.Expect, ", ")+")\n") || strings.Count(out, "\nFAIL ") != len(v.Expect) {
			t.Errorf("%s: exit %d, want 1 failing %v\n%s", v.Name, code, v.Expect, out)
		}
		for _, c := range v.Expect {
			if !strings.Contains(out, "\nFAIL "+c+": ") {
				t.Errorf("%s: no FAIL line for %s\n%s", v.Name, c, out)
			}
		}
	}
}

// TestVerifyRecordProofFlags: where the log key comes from, the default
// count of witnesses, and the exit statuses of the other verify commands.
func TestVerifyRecordProofFlags(t *testing.T) {
	t.Parallel()
	vs := proofVectors(t)
	var good, tooFew proofVector
	for _, v := range vs {
		switch v.Name {
		case "proof-two-witnesses":
			good = v
		case "proof-too-few-cosignatures":
			tooFew = v
		}
	}
	if good.Name == "" || tooFew.Name == "" {
		t.Fatal("the vectors proof-two-witnesses and proof-too-few-cosignatures are missing")
	}
	jwks, err := os.ReadFile(vec("keys.jwks.json"))
	if err != nil {
		t.Fatal(err)
	}
	published := strings.Replace(string(jwks), `{"keys":`, `{"log":{"origin":"consensus.example/log","verifierKey":"`+good.LogKey+
		`","checkpoint":"https://consensus.example/log/checkpoint"},"keys":`, 1)
	if published == string(jwks) {
		t.Fatalf("keys.jwks.json does not start as expected: %.40s", jwks)
	}
	keysDoc := write(t, "consensus-keys.json", published)
	badLogKey := write(t, "bad-log.json", strings.Replace(published, good.LogKey, "consensus.example/log+00000000+AQ==", 1))
	w1, w2 := good.Witnesses[0], good.Witnesses[1]
	rec, proof := vec(good.Record), vec(good.Proof)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"log key from the keys document", []string{rec, "--keys", keysDoc, "--proof", proof, "--witness", w1, "--witness", w2}, 0, "cosigned by witness.example/one, witness.example/two"},
		{"--log-key wins over the keys document", []string{rec, "--keys", badLogKey, "--proof", proof, "--log-key", good.LogKey}, 0, "no witness named"},
		{"every --witness wanted by default", []string{vec(tooFew.Record), "--keys", keysDoc, "--proof", vec(tooFew.Proof), "--witness", w1, "--witness", w2}, 1, "at least 2 wanted"},
		{"--witnesses 1 of 2", []string{vec(tooFew.Record), "--keys", keysDoc, "--proof", vec(tooFew.Proof), "--witness", w1, "--witness", w2, "--witnesses", "1"}, 0, "PROOF: VERIFIED"},
		{"a verified proof authenticates without --keys", []string{rec, "--proof", proof, "--log-key", good.LogKey}, 0, "NOT AUTHENTICATED"},
		{"a failed proof without --keys", []string{vec(tooFew.Record), "--proof", vec(tooFew.Proof), "--log-key", good.LogKey, "--witness", w2}, 1, "PROOF: FAILED (cosignatures)"},
		{"the record fails, the proof verifies", []string{vec("changed-body.record.json"), "--keys", keysDoc, "--proof", proof}, 1, "FAIL leaf-matches-record"},
		{"no log key", []string{rec, "--keys", vec("keys.jwks.json"), "--proof", proof}, 2, "--log-key VKEY"},
		{"no log key, no keys", []string{rec, "--proof", proof}, 2, "--log-key VKEY"},
		{"--witness without --proof", []string{rec, "--keys", keysDoc, "--witness", w1}, 2, "check a --proof"},
		{"--log-key without --proof", []string{rec, "--keys", keysDoc, "--log-key", good.LogKey}, 2, "check a --proof"},
		{"--witnesses without --proof", []string{rec, "--keys", keysDoc, "--witnesses", "0"}, 2, "check a --proof"},
		{"more cosignatures than witnesses", []string{rec, "--keys", keysDoc, "--proof", proof, "--witness", w1, "--witnesses", "2"}, 2, "--witnesses 2"},
		{"a malformed --witness", []string{rec, "--keys", keysDoc, "--proof", proof, "--witness", "one=AAAA"}, 2, "--witness"},
		{"a malformed --log-key", []string{rec, "--keys", keysDoc, "--proof", proof, "--log-key", "log+1+x"}, 2, "--log-key"},
		{"a malformed published log key", []string{rec, "--keys", badLogKey, "--proof", proof}, 3, "log.verifierKey"},
		{"no proof file", []string{rec, "--keys", keysDoc, "--proof", filepath.Join(t.TempDir(), "none.json")}, 3, "none.json"},
		{"not a proof", []string{rec, "--keys", keysDoc, "--proof", rec}, 3, "consensus-log-proof/v1"},
	} {
		code, out := runCLI(append([]string{"verify", "record"}, tc.args...)...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, want %d with %q\n%s", tc.name, code, tc.code, tc.want, out)
		}
	}
}
