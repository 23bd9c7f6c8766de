package e2e

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/cli"
	"github.com/consensus-md/consensus/internal/translog"
)

// TestRecordProofFromTheLog: a room reaches its outcome; its proof is
// record-not-ready before, then (once the log has integrated the record)
// a consensus-log-proof/v1 that verifies against the record with the log
// key /.well-known/consensus-keys publishes, the same for the operator.
// The checkpoint and the tiles the log serves hold the same leaf. Every
// exchange is checked against openapi.json by the server's client.
func TestRecordProofFromTheLog(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Logged room", s.future(), participantSpec{"Ada", "agent", true})
	ada := s.agent(c.Participants[0].InvitationID).join()
	proofPath := s.agentPath(ada.inv.InvitationID, "record/proof")
	expect(t, s.do("GET", proofPath, ada.auth(), nil), 404, "record-not-ready")
	expect(t, s.do("GET", proofPath, nil, nil), 401, "unauthorized")
	expect(t, ada.post("ada-agree-1", "agree", ""), 201, "")

	proof := waitForProof(t, s, proofPath, ada.auth())
	rec := ada.record(nil)
	expect(t, rec, 200, "")

	// The log key, from the keys document and the capabilities.
	keys := s.do("GET", "/.well-known/consensus-keys", nil, nil)
	expect(t, keys, 200, "")
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
		Log  struct{ Origin, VerifierKey, Checkpoint string }
	}
	if err := json.Unmarshal(keys.body, &doc); err != nil || len(doc.Keys) == 0 {
		t.Fatalf("consensus-keys: %v\n%s", err, keys.body)
	}
	if doc.Log.Checkpoint != s.Origin+"/log/checkpoint" || doc.Log.VerifierKey != proof.LogKey || !strings.HasPrefix(doc.Log.VerifierKey, doc.Log.Origin+"+") {
		t.Fatalf("consensus-keys log member %+v; the proof names key %s", doc.Log, proof.LogKey)
	}
	caps := s.do("GET", "/.well-known/consensus-agent", nil, nil)
	expect(t, caps, 200, "")
	var cd struct {
		Endpoints map[string]struct{ Href string }
		Offered   struct {
			Log struct{ Origin, VerifierKey, Checkpoint, Prefix, Proof string }
		}
	}
	if err := json.Unmarshal(caps.body, &cd); err != nil {
		t.Fatal(err)
	}
	if l := cd.Offered.Log; l.VerifierKey != doc.Log.VerifierKey || l.Prefix != s.Origin+"/log/" || l.Checkpoint != doc.Log.Checkpoint ||
		!strings.HasSuffix(l.Proof, "/{invitationId}/record/proof") || cd.Endpoints["recordProof"].Href != l.Proof {
		t.Fatalf("capabilities offered.log %+v, endpoints.recordProof %+v", l, cd.Endpoints["recordProof"])
	}

	logKey, err := translog.NewVerifier(doc.Log.VerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	res := translog.VerifyProof(proof, translog.VerifyOptions{LogKey: logKey, Record: rec.body})
	if !res.OK() || res.Leaf.AgreementID != c.AgreementID || res.Leaf.Digest == nil || *res.Leaf.Digest != canon.Digest(rec.body) {
		t.Fatalf("the proof does not verify: %v (leaf %+v)", res.FailedChecks(), res.Leaf)
	}
	// Against another record it fails.
	other := bytes.Replace(rec.body, []byte(`"issued_at":"`), []byte(`"issued_at":"1`), 1)
	if translog.VerifyProof(proof, translog.VerifyOptions{LogKey: logKey, Record: other}).OK() {
		t.Fatal("the proof verifies against a changed record")
	}

	// The operator's route gives a proof of the same leaf.
	op := s.do("GET", "/api/v1/admin/agreements/"+c.AgreementID+"/record/proof", operator(), nil)
	expect(t, op, 200, "")
	opProof, err := translog.ParseProof(op.body)
	if err != nil || opProof.LeafIndex != proof.LeafIndex || !translog.VerifyProof(opProof, translog.VerifyOptions{LogKey: logKey, Record: rec.body}).OK() {
		t.Fatalf("operator proof %v: %s", err, op.body)
	}
	expect(t, s.do("GET", "/api/v1/admin/agreements/"+c.AgreementID+"/record/proof", nil, nil), 401, "unauthorized")
	var cliOut, cliErr bytes.Buffer
	cliEnv := cli.Env{Stdout: &cliOut, Stderr: &cliErr, Stdin: strings.NewReader(""), Getenv: func(k string) string {
		return map[string]string{"CONSENSUS_URL": s.URL, "CONSENSUS_OPERATOR_TOKEN": operatorToken}[k]
	}}
	if code := cli.Main([]string{"admin", "get", c.AgreementID, "--proof"}, cliEnv); code != 0 {
		t.Fatalf("consensus admin get --proof: exit %d: %s", code, cliErr.String())
	}
	if cliProof, err := translog.ParseProof(cliOut.Bytes()); err != nil || !translog.VerifyProof(cliProof, translog.VerifyOptions{LogKey: logKey, Record: rec.body}).OK() {
		t.Fatalf("consensus admin get --proof printed a proof that does not verify (%v):\n%s", err, cliOut.String())
	}
	expect(t, s.do("GET", "/api/v1/admin/agreements/00000000-0000-4000-8000-000000000000/record/proof", operator(), nil), 404, "not-found")

	// The checkpoint, signed by the published key, covers the leaf.
	cp := s.do("GET", "/log/checkpoint", nil, nil)
	expect(t, cp, 200, "")
	if cc := cp.Header.Get("Cache-Control"); cc != "public, max-age=1" {
		t.Fatalf("checkpoint Cache-Control %q", cc)
	}
	n, err := note.Open(cp.body, note.VerifierList(logKey))
	if err != nil {
		t.Fatalf("the checkpoint does not verify with the published key: %v\n%s", err, cp.body)
	}
	checkpoint, err := translog.ParseCheckpoint(n.Text)
	if err != nil || checkpoint.Origin != doc.Log.Origin || checkpoint.Size <= proof.LeafIndex {
		t.Fatalf("checkpoint %+v: %v", checkpoint, err)
	}

	// The entry bundle holding the leaf holds its canonical bytes, and the
	// level-0 tile its leaf hash.
	leafBytes, err := canon.Transform(proof.Leaf)
	if err != nil {
		t.Fatal(err)
	}
	n0 := proof.LeafIndex / 256
	width := int(min(checkpoint.Size-n0*256, 256))
	bundle := s.do("GET", "/log/"+translog.TilePath(tlog.Tile{H: translog.TileHeight, L: translog.EntriesLevel, N: n0, W: width}), nil, nil)
	expect(t, bundle, 200, "")
	entries, err := translog.ParseEntryBundle(bundle.body)
	if err != nil || len(entries) != width || !bytes.Equal(entries[proof.LeafIndex%256], leafBytes) {
		t.Fatalf("entry bundle %d: %d entries, %v", n0, len(entries), err)
	}
	if cc := bundle.Header.Get("Cache-Control"); (width == 256) != (cc == "public, max-age=31536000, immutable") {
		t.Fatalf("bundle of width %d: Cache-Control %q", width, cc)
	}
	tile := s.do("GET", "/log/"+translog.TilePath(tlog.Tile{H: translog.TileHeight, L: 0, N: n0, W: width}), nil, nil)
	expect(t, tile, 200, "")
	h := tlog.RecordHash(leafBytes)
	if at := (proof.LeafIndex % 256) * tlog.HashSize; len(tile.body) != width*tlog.HashSize || !bytes.Equal(tile.body[at:at+tlog.HashSize], h[:]) {
		t.Fatalf("tile 0/%d: %d bytes, the leaf's hash is not at %d", n0, len(tile.body), proof.LeafIndex%256)
	}
	// Beyond the tree, and another spelling of a tile, are not found.
	expect(t, s.do("GET", "/log/tile/0/x999/999", nil, nil), 404, "not-found")
	expect(t, s.do("GET", "/log/tile/0/1", invalid(nil), nil), 404, "not-found")
}

// waitForProof polls the proof route until it answers 200 (a record is
// integrated about a second after its outcome), checking each 404 on the
// way is proof-not-ready with Retry-After.
func waitForProof(t *testing.T, s *server, path string, auth map[string]string) translog.Proof {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := s.do("GET", path, auth, nil)
		if r.StatusCode == 200 {
			if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
				t.Fatalf("proof Cache-Control %q", cc)
			}
			p, err := translog.ParseProof(r.body)
			if err != nil {
				t.Fatalf("%v\n%s", err, r.body)
			}
			return p
		}
		expect(t, r, 404, "proof-not-ready")
		if r.Header.Get("Retry-After") != "1" {
			t.Fatalf("proof-not-ready without Retry-After: %v", r.Header)
		}
		if time.Now().After(deadline) {
			t.Fatal("the record's proof is not ready after 20 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
