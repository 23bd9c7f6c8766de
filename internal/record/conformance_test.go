package record

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/jwk"
)

var update = flag.Bool("update", false, "rewrite the vectors under conformance/records")

// vectorDir is where the vectors live, relative to this package.
const vectorDir = "../../conformance/records"

// Vector is one entry of conformance/records/manifest.json.
type Vector struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Record      string   `json:"record"`
	Artifact    *string  `json:"artifact"`
	Keys        string   `json:"keys"`
	Expect      []string `json:"expect"`
}

// Manifest is conformance/records/manifest.json.
type Manifest struct {
	Note    string        `json:"note"`
	Vectors []Vector      `json:"vectors"`
	Proofs  []ProofVector `json:"proofs"`
}

const manifestNote = "Conformance vectors for consensus-record/v1. Every key here is a TEST KEY derived from a public label " +
	"(SHA-256 of \"consensus-md TEST KEY, never use for anything real: <label>\" as the Ed25519 seed): anyone can sign with them. " +
	"expect lists the checks that must fail, exactly; an empty list means the record must verify completely. " +
	"proofs are consensus-log-proof/v1 bundles (SPEC R-LOG-PROOF) of records here: check each against its record with logKey, " +
	"counting the cosignatures of witnesses (at least minCosignatures); expect lists the proof checks that must fail, exactly. " +
	"Both verifiers run these: go test ./internal/record and node tools/verify-record.mjs --conformance conformance/records."

// generate returns every file of the vector directory.
func generate(t testing.TB) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	keys, _ := json.Marshal(testKeys(serviceKey, "service 2025, retired"))
	other, _ := json.Marshal(testKeys(otherServiceKey))
	files["keys.jwks.json"], files["other-keys.jwks.json"] = append(keys, '\n'), append(other, '\n')
	man := Manifest{Note: manifestNote}
	type built struct {
		r           Record
		b, artifact []byte
	}
	base := map[string]built{}
	for _, sc := range scenarios {
		r, b, artifact := sc.signed(t)
		base[sc.name] = built{r, b, artifact}
		v := Vector{Name: sc.name, Description: sc.description, Record: sc.name + ".record.json", Keys: "keys.jwks.json", Expect: []string{}}
		files[v.Record] = b
		if artifact != nil {
			name := sc.name + ".CONSENSUS.md"
			files[name], v.Artifact = artifact, &name
		}
		man.Vectors = append(man.Vectors, v)
	}
	for _, mu := range mutations {
		bb, ok := base[mu.base]
		if !ok {
			t.Fatalf("%s: no base %s", mu.name, mu.base)
		}
		b, artifact := mu.apply(t, bb.r, bb.b, bb.artifact)
		v := Vector{Name: mu.name, Description: mu.description, Record: mu.base + ".record.json", Keys: "keys.jwks.json", Expect: mu.expect}
		if !bytes.Equal(b, bb.b) {
			v.Record = mu.name + ".record.json"
			files[v.Record] = b
		}
		if artifact != nil {
			name := mu.base + ".CONSENSUS.md"
			if !bytes.Equal(artifact, bb.artifact) {
				name = mu.name + ".CONSENSUS.md"
				files[name] = artifact
			}
			v.Artifact = &name
		}
		if mu.otherKeys {
			v.Keys = "other-keys.jwks.json"
		}
		man.Vectors = append(man.Vectors, v)
	}
	addReplyVectors(t, files, &man)
	addProofVectors(t, files, &man)
	mb, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	files["manifest.json"] = append(mb, '\n')
	return files
}

// TestConformanceVectorsCurrent: the committed vectors are exactly what
// the generator makes (run with -update after changing it).
func TestConformanceVectorsCurrent(t *testing.T) {
	t.Parallel()
	files := generate(t)
	if *update {
		if err := os.MkdirAll(vectorDir, 0o755); err != nil {
			t.Fatal(err)
		}
		old, _ := filepath.Glob(filepath.Join(vectorDir, "*"))
		for _, f := range old {
			if filepath.Base(f) != "README.md" {
				_ = os.Remove(f)
			}
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(vectorDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(vectorDir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("conformance/records/%s is stale or missing (%v): run go test ./internal/record -run TestConformanceVectorsCurrent -update", name, err)
		}
	}
}

func readManifest(t *testing.T) Manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Vectors) < 20 {
		t.Fatalf("only %d vectors", len(m.Vectors))
	}
	return m
}

func readVectorFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConformanceGo runs the Go verifier over the committed vectors: each
// fails exactly the checks it lists, and a valid one verifies completely.
func TestConformanceGo(t *testing.T) {
	t.Parallel()
	for _, v := range readManifest(t).Vectors {
		set, err := jwk.ParseSet(readVectorFile(t, v.Keys))
		if err != nil {
			t.Fatal(err)
		}
		opt := Options{Keys: &set}
		if v.Artifact != nil {
			opt.Artifact = readVectorFile(t, *v.Artifact)
		}
		rep := Verify(readVectorFile(t, v.Record), opt)
		var out strings.Builder
		_ = rep.Write(&out)
		if got := rep.FailedChecks(); !slices.Equal(got, v.Expect) && !(len(got) == 0 && len(v.Expect) == 0) {
			t.Errorf("%s: failed %v, want %v\n%s", v.Name, got, v.Expect, out.String())
			continue
		}
		if len(v.Expect) == 0 && (!rep.Authenticated() || !strings.HasSuffix(out.String(), "RESULT: VERIFIED\n")) {
			t.Errorf("%s: not verified completely\n%s", v.Name, out.String())
		}
		for _, f := range rep.Failed {
			if strings.TrimSpace(f.Message) == "" {
				t.Errorf("%s: a %s failure without a message", v.Name, f.Check)
			}
		}
	}
}

// TestConformanceNode runs the standard-library verifier (node:crypto
// only) over the same vectors, as the bundle the service publishes at
// /tools/verify-record.mjs (consensus.VerifyRecord, those very bytes) and
// as its source modules; it checks the expected failures itself and exits
// 1 on any difference.
func TestConformanceNode(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is required: the second verifier is a Node program")
	}
	bundle := filepath.Join(t.TempDir(), "verify-record.mjs")
	if err := os.WriteFile(bundle, consensus.VerifyRecord, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{bundle, "../../tools/verify-record.mjs"} {
		out, err := exec.Command(node, script, "--conformance", vectorDir).CombinedOutput()
		if err != nil {
			t.Fatalf("node verifier %s: %v\n%s", script, err, out)
		}
		m := readManifest(t)
		if !strings.Contains(string(out), "conformance: "+itoa(len(m.Vectors))+" vectors, "+itoa(len(m.Proofs))+" proof vectors, 0 differ") {
			t.Fatalf("%s: unexpected summary:\n%s", script, out)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
