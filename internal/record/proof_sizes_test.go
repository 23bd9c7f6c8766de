package record

import (
	"crypto/ed25519"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/translog"
)

// TestProofShapesNode runs the Node verifier's own inclusion check (RFC
// 9162 §2.1.3.2, written there from the RFC) over proofs x/mod's tlog makes
// for a record leaf at every index of every tree of 1 to 33 leaves, each
// also with the index of the next leaf, which must fail: the committed
// vectors hold two tree shapes only.
func TestProofShapesNode(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is required: the second verifier is a Node program")
	}
	dir := t.TempDir()
	record := readVectorFile(t, "reached-mixed.record.json")
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("record.json", record)
	log, _ := translog.NewSigner(proofOrigin, testKey(logKeyLabel))
	oneKey := translog.CosignatureVerifierKey(witnessOne, testKey(witnessOne).Public().(ed25519.PublicKey))
	_, head := milestones(t, record)
	leaf, err := translog.RecordLeaf(record)
	if err != nil {
		t.Fatal(err)
	}
	man := Manifest{Vectors: []Vector{}}
	for size := int64(1); size <= 33; size++ {
		for i := int64(0); i < size; i++ {
			var tree vectorTree
			for j := int64(0); j < size; j++ {
				if j == i {
					tree.add(t, leaf)
				} else {
					tree.add(t, head)
				}
			}
			root, err := tlog.TreeHash(size, &tree)
			if err != nil {
				t.Fatal(err)
			}
			c := translog.Checkpoint{Origin: proofOrigin, Size: size, Root: root}
			signed, err := log.SignCheckpoint(c)
			if err != nil {
				t.Fatal(err)
			}
			signed = translog.AddSignatureLines(signed, cosignLine(witnessOne, testKey(witnessOne), cosignTime, c.Text()))
			rp, err := tlog.ProveRecord(size, i, &tree)
			if err != nil {
				t.Fatal(err)
			}
			for _, wrong := range []bool{false, true} {
				p := translog.NewProof(tree.leaves[i], i, rp, signed, log.VerifierKey())
				v := ProofVector{Name: "size " + itoa(int(size)) + " index " + itoa(int(i)), Record: "record.json", LogKey: log.VerifierKey(),
					Witnesses: []string{oneKey}, MinCosignatures: 1, Expect: []string{}}
				if wrong {
					if size == 1 {
						continue
					}
					p.LeafIndex = (i + 1) % size
					v.Name += " as " + itoa(int(p.LeafIndex))
					v.Expect = []string{"inclusion"}
				}
				v.Proof = strings.ReplaceAll(v.Name, " ", "-") + ".proof.json"
				logKey, _ := translog.NewVerifier(v.LogKey)
				w, _ := translog.WitnessKey(oneKey)
				got := translog.VerifyProof(p, translog.VerifyOptions{LogKey: logKey, Record: record, Witnesses: []note.Verifier{w}, MinCosignatures: 1})
				if strings.Join(got.FailedChecks(), ",") != strings.Join(v.Expect, ",") {
					t.Fatalf("%s: the Go verifier fails %v", v.Name, got.FailedChecks())
				}
				b, _ := json.Marshal(p)
				write(v.Proof, b)
				man.Proofs = append(man.Proofs, v)
			}
		}
	}
	b, _ := json.Marshal(man)
	write("manifest.json", b)
	bundle := filepath.Join(t.TempDir(), "verify-record.mjs")
	if err := os.WriteFile(bundle, consensus.VerifyRecord, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{bundle, "../../tools/verify-record.mjs"} {
		out, err := exec.Command(node, script, "--conformance", dir).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "conformance: 0 vectors, "+itoa(len(man.Proofs))+" proof vectors, 0 differ") {
			t.Fatalf("node verifier %s: %v\n%s", script, err, out)
		}
	}
}
