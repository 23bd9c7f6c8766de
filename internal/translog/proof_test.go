package translog

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// memTree is a tlog tree held in memory: its stored hashes.
type memTree struct {
	hashes []tlog.Hash
	leaves [][]byte
}

func (m *memTree) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		out[i] = m.hashes[x]
	}
	return out, nil
}

func (m *memTree) add(t *testing.T, leaf []byte) int64 {
	n := int64(len(m.leaves))
	hs, err := tlog.StoredHashes(n, leaf, m)
	if err != nil {
		t.Fatal(err)
	}
	m.hashes = append(m.hashes, hs...)
	m.leaves = append(m.leaves, leaf)
	return n
}

// testRecord is enough of a consensus-record/v1 for the leaf to describe.
func testRecord(agreement string, events int) []byte {
	return []byte(fmt.Sprintf(`{"agreement_id":%q,"issued_at":%q,"revisions":[{"number":1},{"number":2}],"chain_head":%q,"event_count":%d}`,
		agreement, at, hexA, events))
}

func leafOf(t *testing.T, record []byte) []byte {
	l := recordLeaf()
	var rec struct {
		AgreementID string `json:"agreement_id"`
		EventCount  int64  `json:"event_count"`
	}
	if err := json.Unmarshal(record, &rec); err != nil {
		t.Fatal(err)
	}
	l.AgreementID, l.Seq, l.Digest = rec.AgreementID, &rec.EventCount, ptr(sha256Hex(record))
	b, err := l.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const origin = "example.com/log"

type fixture struct {
	tree               memTree
	log                *Signer
	witnessA, witnessB ed25519.PrivateKey
	recordA, recordB   []byte
	indexA, indexB     int64
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{witnessA: testKey("witness-a"), witnessB: testKey("witness-b")}
	f.log, _ = NewSigner(origin, testKey("log"))
	f.recordA, f.recordB = testRecord(agID, 7), testRecord("0190f3a4-1111-7000-8000-000000000002", 3)
	head, _ := Leaf{Type: LeafType, AgreementID: agID, Kind: KindHead, Revision: 1, Seq: ptr[int64](1), ChainHead: ptr(hexB), At: at}.Bytes()
	for i := 0; i < 5; i++ {
		f.tree.add(t, head)
	}
	f.indexA = f.tree.add(t, leafOf(t, f.recordA))
	f.tree.add(t, head)
	f.indexB = f.tree.add(t, leafOf(t, f.recordB))
	f.tree.add(t, head)
	return f
}

// proof returns the bundle of leaf index i, its checkpoint signed by
// signer and cosigned by the witnesses given.
func (f *fixture) proof(t *testing.T, i int64, signer *Signer, witnesses ...string) Proof {
	size := int64(len(f.tree.leaves))
	root, err := tlog.TreeHash(size, &f.tree)
	if err != nil {
		t.Fatal(err)
	}
	c := Checkpoint{Origin: signer.Name(), Size: size, Root: root}
	signed, err := signer.SignCheckpoint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range witnesses {
		signed = AddSignatureLines(signed, cosign(w, testKey(w), 1700000000, c.Text()))
	}
	rp, err := tlog.ProveRecord(size, i, &f.tree)
	if err != nil {
		t.Fatal(err)
	}
	return NewProof(f.tree.leaves[i], i, rp, signed, f.log.VerifierKey())
}

func witness(t *testing.T, name string) note.Verifier {
	v, err := WitnessKey(name + "=" + base64.StdEncoding.EncodeToString(testKey(name).Public().(ed25519.PublicKey)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVerifyProof(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	logKey, err := NewVerifier(f.log.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewSigner(origin, testKey("another log"))
	otherName, _ := NewSigner("other.example/log", testKey("log"))
	wa, wb, wc := witness(t, "witness-a"), witness(t, "witness-b"), witness(t, "witness-c")
	opts := func(min int, ws ...note.Verifier) VerifyOptions {
		return VerifyOptions{LogKey: logKey, Record: f.recordA, Witnesses: ws, MinCosignatures: min}
	}
	good := func() Proof { return f.proof(t, f.indexA, f.log, "witness-a", "witness-b") }
	for _, tc := range []struct {
		name  string
		proof Proof
		opt   VerifyOptions
		want  []string // the checks that must fail
	}{
		{"good, two witnesses", good(), opts(2, wa, wb), nil},
		{"good, one of two witnesses wanted", good(), opts(1, wa, wc), nil},
		{"good, no witness named", good(), VerifyOptions{LogKey: logKey, Record: f.recordA}, nil},
		{"good, no record given", good(), VerifyOptions{LogKey: logKey}, nil},
		{"good, last leaf of an odd tree", f.proof(t, f.indexB, f.log, "witness-a"), VerifyOptions{LogKey: logKey, Record: f.recordB, Witnesses: []note.Verifier{wa}, MinCosignatures: 1}, nil},
		{"wrong leaf", func() Proof {
			p := good()
			p.Leaf = leafOf(t, testRecord(agID, 8))
			return p
		}(), opts(2, wa, wb), []string{"leaf-matches-record", "inclusion"}},
		{"leaf of another record", f.proof(t, f.indexB, f.log, "witness-a", "witness-b"), opts(2, wa, wb), []string{"leaf-matches-record"}},
		{"leaf not matching the record", good(), VerifyOptions{LogKey: logKey, Record: append(append([]byte{}, f.recordA...), ' ')}, []string{"leaf-matches-record"}},
		{"not a record leaf", f.proof(t, 0, f.log, "witness-a"), opts(1, wa), []string{"leaf"}},
		{"leaf not JSON", func() Proof { p := good(); p.Leaf = json.RawMessage(`"x`); return p }(), opts(2, wa, wb), []string{"leaf", "inclusion"}},
		{"wrong index", func() Proof { p := good(); p.LeafIndex--; return p }(), opts(2, wa, wb), []string{"inclusion"}},
		{"index beyond the tree", func() Proof { p := good(); p.LeafIndex = 9; return p }(), opts(2, wa, wb), []string{"inclusion"}},
		{"negative index", func() Proof { p := good(); p.LeafIndex = -1; return p }(), opts(2, wa, wb), []string{"inclusion"}},
		{"proof hash changed", func() Proof { p := good(); p.InclusionProof[0] = p.InclusionProof[1]; return p }(), opts(2, wa, wb), []string{"inclusion"}},
		{"proof hash not base64", func() Proof { p := good(); p.InclusionProof[0] = "!"; return p }(), opts(2, wa, wb), []string{"inclusion"}},
		{"proof hash missing", func() Proof { p := good(); p.InclusionProof = p.InclusionProof[1:]; return p }(), opts(2, wa, wb), []string{"inclusion"}},
		{"checkpoint signed by another key", f.proof(t, f.indexA, other, "witness-a", "witness-b"), opts(2, wa, wb), []string{"log-signature"}},
		{"checkpoint signed by a key of another name", f.proof(t, f.indexA, otherName, "witness-a", "witness-b"), opts(2, wa, wb), []string{"log-signature"}},
		{"checkpoint text changed", func() Proof {
			p := good()
			p.Checkpoint = strings.Replace(p.Checkpoint, "\n9\n", "\n10\n", 1)
			return p
		}(), opts(2, wa, wb), []string{"log-signature"}},
		{"checkpoint without signatures", func() Proof {
			p := good()
			p.Checkpoint = p.Checkpoint[:strings.Index(p.Checkpoint, "\n\n")+2]
			return p
		}(), opts(2, wa, wb), []string{"log-signature"}},
		{"no log key", good(), VerifyOptions{Record: f.recordA}, []string{"log-signature"}},
		{"too few cosignatures", f.proof(t, f.indexA, f.log, "witness-a"), opts(2, wa, wb), []string{"cosignatures"}},
		{"a cosignature by a witness not named", f.proof(t, f.indexA, f.log, "witness-c"), opts(1, wa), []string{"cosignatures"}},
		{"one witness named twice", f.proof(t, f.indexA, f.log, "witness-a"), opts(2, wa, wa), []string{"cosignatures"}},
		{"a named witness's cosignature does not verify", func() Proof {
			p := good()
			line := cosign("witness-a", testKey("witness-a"), 1700000000, "")
			i := strings.Index(p.Checkpoint, line[:len("— witness-a ")+8])
			p.Checkpoint = p.Checkpoint[:i] + cosign("witness-a", testKey("witness-a"), 1700000000, "other text\n") + p.Checkpoint[i+len(line):]
			return p
		}(), opts(1, wa), []string{"cosignatures"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := VerifyProof(tc.proof, tc.opt)
			if got := r.FailedChecks(); !slices.Equal(got, tc.want) {
				t.Fatalf("failed %v, want %v\n%+v", got, tc.want, r.Checks)
			}
			if r.OK() != (len(tc.want) == 0) {
				t.Fatalf("OK() = %v with failures %v", r.OK(), tc.want)
			}
			for _, c := range r.Checks {
				if c.Detail == "" {
					t.Errorf("check %s says nothing", c.Name)
				}
			}
		})
	}
}

func TestVerifyProofNamesCosigners(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	logKey, _ := NewVerifier(f.log.VerifierKey())
	r := VerifyProof(f.proof(t, f.indexA, f.log, "witness-b", "witness-c"), VerifyOptions{
		LogKey: logKey, Record: f.recordA, MinCosignatures: 1,
		Witnesses: []note.Verifier{witness(t, "witness-a"), witness(t, "witness-b"), witness(t, "witness-c")},
	})
	if !r.OK() || !slices.Equal(r.Cosigned, []string{"witness-b", "witness-c"}) || r.Checkpoint.Size != 9 || r.Leaf.AgreementID != agID {
		t.Fatalf("%+v", r)
	}
	if names := []string{"leaf", "leaf-matches-record", "log-signature", "inclusion", "cosignatures"}; !slices.Equal(checkNames(r), names) {
		t.Fatalf("checks %v, want %v", checkNames(r), names)
	}
}

func checkNames(r Result) []string {
	var out []string
	for _, c := range r.Checks {
		out = append(out, c.Name)
	}
	return out
}

func TestParseProof(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b, err := json.Marshal(f.proof(t, f.indexA, f.log))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseProof(b)
	if err != nil || p.LeafIndex != f.indexA || string(p.Leaf) != string(f.tree.leaves[f.indexA]) {
		t.Fatalf("ParseProof: %+v, %v", p, err)
	}
	s := string(b)
	for _, bad := range []string{
		``, `[]`, `{}`, s + `{}`,
		strings.Replace(s, ProofType, "consensus-log-proof/v2", 1),
		strings.Replace(s, `"leafIndex"`, `"LeafIndex"`, 1),
		strings.Replace(s, `"type"`, `"TYPE"`, 1),
		strings.Replace(s, `"leafIndex":`, `"leafIndex":0,"leafIndex":`, 1),
		strings.Replace(s, `"logKey"`, `"note":1,"logKey"`, 1),
		strings.Replace(s, `"leafIndex":5`, `"leafIndex":5.5`, 1),
		strings.Replace(s, `"leafIndex":5`, `"leafIndex":"5"`, 1),
	} {
		if _, err := ParseProof([]byte(bad)); err == nil {
			t.Errorf("ParseProof(%.80s…) accepted", bad)
		}
	}
}

func TestRecordLeaf(t *testing.T) {
	t.Parallel()
	rec := testRecord(agID, 7)
	l, err := RecordLeaf(rec)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := l.Bytes(); string(b) != string(leafOf(t, rec)) {
		t.Fatalf("RecordLeaf = %s, want %s", b, leafOf(t, rec))
	}
	for _, bad := range []string{`{}`, `[]`, `{"agreement_id":"a","revisions":[]}`, `{"agreement_id":"a","issued_at":"x","revisions":[{"number":1}],"chain_head":"nothex","event_count":1}`} {
		if _, err := RecordLeaf([]byte(bad)); err == nil {
			t.Errorf("RecordLeaf(%s) accepted", bad)
		}
	}
}
