package record

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/translog"
)

// ProofVector is one entry of the manifest's proofs: a
// consensus-log-proof/v1 bundle, the record it must prove, the log key and
// witness keys to check it with (witnesses as `consensus verify record
// --witness` takes them), how many cosignatures are wanted, and the proof
// checks that must fail, exactly.
type ProofVector struct {
	Name            string   `json:"name"`
	Description     string   `json:"description"`
	Record          string   `json:"record"`
	Proof           string   `json:"proof"`
	LogKey          string   `json:"logKey"`
	Witnesses       []string `json:"witnesses"`
	MinCosignatures int      `json:"minCosignatures"`
	Expect          []string `json:"expect"`
}

// The log of the proof vectors: its origin, and the labels of its key, of
// another key under the same origin, and of the witnesses' keys.
const (
	proofOrigin   = "consensus.example/log"
	logKeyLabel   = "log consensus.example"
	otherLogLabel = "log, another deployment"
	witnessOne    = "witness.example/one"
	witnessTwo    = "witness.example/two"
	cosignTime    = 1788350400 // 2026-09-02T12:00:00Z
)

// vectorTree is a tlog tree in memory.
type vectorTree struct {
	hashes []tlog.Hash
	leaves [][]byte
}

func (m *vectorTree) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		out[i] = m.hashes[x]
	}
	return out, nil
}

func (m *vectorTree) add(t testing.TB, l translog.Leaf) int64 {
	b, err := l.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(m.leaves))
	hs, err := tlog.StoredHashes(n, b, m)
	if err != nil {
		t.Fatal(err)
	}
	m.hashes, m.leaves = append(m.hashes, hs...), append(m.leaves, b)
	return n
}

// milestones are the revision and head leaves a log holds for a record
// before its record leaf.
func milestones(t testing.TB, record []byte) (revisions []translog.Leaf, head translog.Leaf) {
	var r Record
	if err := json.Unmarshal(record, &r); err != nil {
		t.Fatal(err)
	}
	for _, rev := range r.Revisions {
		var c struct {
			LockedAt string `json:"locked_at"`
		}
		_ = json.Unmarshal(rev.Canonical, &c)
		d := rev.RevisionDigest
		revisions = append(revisions, translog.Leaf{Type: translog.LeafType, AgreementID: r.AgreementID, Kind: translog.KindRevision,
			Revision: rev.Number, Digest: &d, At: c.LockedAt})
	}
	seq, chain := int64(r.EventCount), r.ChainHead
	last := r.Events[len(r.Events)-1]
	head = translog.Leaf{Type: translog.LeafType, AgreementID: r.AgreementID, Kind: translog.KindHead,
		Revision: r.Revisions[len(r.Revisions)-1].Number, Seq: &seq, ChainHead: &chain, At: last.CreatedAt}
	return revisions, head
}

// cosignLine is the signature line a C2SP tlog-cosignature/v1 witness adds:
// Ed25519 over "cosignature/v1\ntime T\n" and the checkpoint text, after
// the key hash and T.
func cosignLine(name string, priv ed25519.PrivateKey, t uint64, text string) string {
	kh := sha256.Sum256(append([]byte(name+"\n\x04"), priv.Public().(ed25519.PublicKey)...))
	sig := ed25519.Sign(priv, []byte(fmt.Sprintf("cosignature/v1\ntime %d\n%s", t, text)))
	b := binary.BigEndian.AppendUint64(append([]byte{}, kh[:4]...), t)
	return "— " + name + " " + base64.StdEncoding.EncodeToString(append(b, sig...)) + "\n"
}

// addProofVectors logs reached-mixed and disagreed and writes proofs of
// their records, good and broken.
func addProofVectors(t testing.TB, files map[string][]byte, man *Manifest) {
	t.Helper()
	log, err := translog.NewSigner(proofOrigin, testKey(logKeyLabel))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := translog.NewSigner(proofOrigin, testKey(otherLogLabel))
	pubOf := func(label string) string {
		return base64.StdEncoding.EncodeToString(testKey(label).Public().(ed25519.PublicKey))
	}
	oneKey := witnessOne + "=" + pubOf(witnessOne)
	twoKey := translog.CosignatureVerifierKey(witnessTwo, testKey(witnessTwo).Public().(ed25519.PublicKey))

	mixed, disagreed := files["reached-mixed.record.json"], files["disagreed.record.json"]
	var tree vectorTree
	revsA, headA := milestones(t, mixed)
	revsB, headB := milestones(t, disagreed)
	for _, l := range append(revsA, revsB...) {
		tree.add(t, l)
	}
	headIndex := tree.add(t, headA)
	tree.add(t, headB)
	recordLeaf := func(b []byte) translog.Leaf {
		l, err := translog.RecordLeaf(b)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	indexA := tree.add(t, recordLeaf(mixed))
	tree.add(t, headA) // an unchanged head is not logged again; this stands for another room's
	indexB := tree.add(t, recordLeaf(disagreed))
	size := int64(len(tree.leaves))
	root, err := tlog.TreeHash(size, &tree)
	if err != nil {
		t.Fatal(err)
	}
	c := translog.Checkpoint{Origin: proofOrigin, Size: size, Root: root}
	checkpoint := func(s *translog.Signer, witnesses ...string) string {
		signed, err := s.SignCheckpoint(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range witnesses {
			signed = translog.AddSignatureLines(signed, cosignLine(w, testKey(w), cosignTime, c.Text()))
		}
		return string(signed)
	}
	proof := func(i int64, cp string) translog.Proof {
		rp, err := tlog.ProveRecord(size, i, &tree)
		if err != nil {
			t.Fatal(err)
		}
		return translog.NewProof(tree.leaves[i], i, rp, []byte(cp), log.VerifierKey())
	}
	both := checkpoint(log, witnessOne, witnessTwo)
	forged := strings.Replace(both, cosignLine(witnessTwo, testKey(witnessTwo), cosignTime, c.Text()),
		cosignLine(witnessTwo, testKey(witnessTwo), cosignTime, strings.Replace(c.Text(), fmt.Sprintf("\n%d\n", size), fmt.Sprintf("\n%d\n", size+1), 1)), 1)
	type vec struct {
		name, description, record string
		p                         translog.Proof
		witnesses                 []string
		min                       int
		expect                    []string
	}
	wrongLeaf := proof(indexA, both)
	wrongLeaf.Leaf = tree.leaves[indexB]
	wrongIndex := proof(indexA, both)
	wrongIndex.LeafIndex++
	for _, v := range []vec{
		{"proof-cosigned", "The proof of reached-mixed's record: its record leaf, an inclusion proof in a tree of " + fmt.Sprint(size) +
			" leaves, the checkpoint signed by the log and cosigned by both witnesses; one witness named, one wanted.",
			"reached-mixed", proof(indexA, both), []string{oneKey}, 1, nil},
		{"proof-two-witnesses", "The proof of disagreed's record (the last leaf of the tree), both witnesses named (one as NAME=KEY, one as a verifier key), both wanted.",
			"disagreed", proof(indexB, both), []string{oneKey, twoKey}, 2, nil},
		{"proof-wrong-leaf", "reached-mixed's proof with disagreed's record leaf put in its place: the leaf describes disagreed's record, but the proof does not lead from it at that index to the root.",
			"disagreed", wrongLeaf, []string{oneKey}, 1, []string{"inclusion"}},
		{"proof-leaf-not-the-record", "A good proof of disagreed's record checked against reached-mixed's record: the leaf is in the log, but it is another record's.",
			"reached-mixed", proof(indexB, both), []string{oneKey}, 1, []string{"leaf-matches-record"}},
		{"proof-head-leaf", "A good inclusion proof of reached-mixed's head leaf: a head leaf is not a record leaf.",
			"reached-mixed", proof(headIndex, both), []string{oneKey}, 1, []string{"leaf"}},
		{"proof-wrong-index", "reached-mixed's proof with its leaf index one higher.",
			"reached-mixed", wrongIndex, []string{oneKey}, 1, []string{"inclusion"}},
		{"proof-other-log-key", "The same checkpoint under the same origin signed by another key (and cosigned): the log's key did not sign it, so nothing after the log signature is checked.",
			"reached-mixed", proof(indexA, checkpoint(other, witnessOne, witnessTwo)), []string{oneKey}, 1, []string{"log-signature"}},
		{"proof-too-few-cosignatures", "Cosigned by witness one only; both witnesses named and both wanted.",
			"reached-mixed", proof(indexA, checkpoint(log, witnessOne)), []string{oneKey, twoKey}, 2, []string{"cosignatures"}},
		{"proof-cosigned-by-another-witness", "Cosigned by witness two only, and only witness one is named.",
			"reached-mixed", proof(indexA, checkpoint(log, witnessTwo)), []string{oneKey}, 1, []string{"cosignatures"}},
		{"proof-forged-cosignature", "Witness two's line is its signature over another checkpoint (one leaf larger): it does not verify, so one of the two wanted cosignatures is missing.",
			"reached-mixed", proof(indexA, forged), []string{oneKey, twoKey}, 2, []string{"cosignatures"}},
	} {
		b, err := json.MarshalIndent(v.p, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		files[v.name+".proof.json"] = append(b, '\n')
		man.Proofs = append(man.Proofs, ProofVector{Name: v.name, Description: v.description, Record: v.record + ".record.json",
			Proof: v.name + ".proof.json", LogKey: log.VerifierKey(), Witnesses: v.witnesses, MinCosignatures: v.min, Expect: append([]string{}, v.expect...)})
	}
}

// TestConformanceProofsGo runs translog's verifier over the committed
// proof vectors: each fails exactly the checks it lists.
func TestConformanceProofsGo(t *testing.T) {
	t.Parallel()
	m := readManifest(t)
	if len(m.Proofs) < 8 {
		t.Fatalf("only %d proof vectors", len(m.Proofs))
	}
	for _, v := range m.Proofs {
		p, err := translog.ParseProof(readVectorFile(t, v.Proof))
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		logKey, err := translog.NewVerifier(v.LogKey)
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		opt := translog.VerifyOptions{LogKey: logKey, Record: readVectorFile(t, v.Record), MinCosignatures: v.MinCosignatures}
		for _, w := range v.Witnesses {
			k, err := translog.WitnessKey(w)
			if err != nil {
				t.Fatalf("%s: %v", v.Name, err)
			}
			opt.Witnesses = append(opt.Witnesses, k)
		}
		r := translog.VerifyProof(p, opt)
		if got := r.FailedChecks(); !slices.Equal(got, v.Expect) && !(len(got) == 0 && len(v.Expect) == 0) {
			t.Errorf("%s: failed %v, want %v\n%+v", v.Name, got, v.Expect, r.Checks)
		}
		if len(v.Expect) == 0 && (!r.OK() || len(r.Checks) != 5) {
			t.Errorf("%s: not verified completely: %+v", v.Name, r.Checks)
		}
	}
}
