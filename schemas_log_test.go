package consensus_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/translog"
)

// TestLogSchemasAcceptWhatTheServerEmits: the published leaf and proof
// schemas accept the leaves of every kind and the proof bundle translog
// builds, and refuse a leaf with a member its kind does not have, a proof
// of a non-record leaf and a proof with a member too many.
func TestLogSchemasAcceptWhatTheServerEmits(t *testing.T) {
	t.Parallel()
	schemas := compileSchemas(t)
	leafSchema, proofSchema := schemas["consensus-log-leaf/v1"], schemas["consensus-log-proof/v1"]
	const agreementID = "3f0c2b9e-8d4a-4e61-9b7c-5a2d1e0f3c4b"
	hex := strings.Repeat("ab", 32)
	seq, zero := int64(3), int64(0)
	leaves := map[string]translog.Leaf{
		"revision":       {Type: translog.LeafType, AgreementID: agreementID, Kind: translog.KindRevision, Revision: 1, Digest: &hex, At: "2026-09-01T12:00:00Z"},
		"head":           {Type: translog.LeafType, AgreementID: agreementID, Kind: translog.KindHead, Revision: 1, Seq: &seq, ChainHead: &hex, At: "2026-09-01T12:00:05.120000Z"},
		"record":         {Type: translog.LeafType, AgreementID: agreementID, Kind: translog.KindRecord, Revision: 2, Seq: &seq, ChainHead: &hex, Digest: &hex, At: "2026-09-01T12:00:06.000001Z"},
		"empty record":   {Type: translog.LeafType, AgreementID: agreementID, Kind: translog.KindRecord, Revision: 1, Seq: &zero, ChainHead: &hex, Digest: &hex, At: "2026-09-01T12:00:06.000001Z"},
		"head, digested": {Type: translog.LeafType, AgreementID: agreementID, Kind: translog.KindHead, Revision: 1, Seq: &seq, ChainHead: &hex, Digest: &hex, At: "2026-09-01T12:00:05Z"},
		"revision, seq":  {Type: translog.LeafType, AgreementID: agreementID, Kind: translog.KindRevision, Revision: 1, Seq: &seq, Digest: &hex, At: "2026-09-01T12:00:00Z"},
	}
	for name, l := range leaves {
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		valid := l.Validate() == nil
		if err := leafSchema.Validate(decode(t, b)); (err == nil) != valid {
			t.Errorf("leaf %s: translog valid=%v, the schema says %v", name, valid, err)
		}
	}

	proof := func(l translog.Leaf) []byte {
		leaf, err := l.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		signer, err := translog.NewSigner("consensus.md/log", ed25519.NewKeyFromSeed(make([]byte, 32)))
		if err != nil {
			t.Fatal(err)
		}
		other := tlog.RecordHash([]byte("another leaf"))
		root := tlog.NodeHash(tlog.RecordHash(leaf), other)
		signed, err := signer.SignCheckpoint(translog.Checkpoint{Origin: "consensus.md/log", Size: 2, Root: root})
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(translog.NewProof(leaf, 0, tlog.RecordProof{other}, signed, signer.VerifierKey()))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := proof(leaves["record"])
	if err := proofSchema.Validate(decode(t, good)); err != nil {
		t.Errorf("the proof translog builds is refused: %v", err)
	}
	extra := bytes.Replace(good, []byte(`{"type"`), []byte(`{"treeSize":2,"type"`), 1)
	for name, b := range map[string][]byte{"a head leaf": proof(leaves["head"]), "a member too many": extra} {
		if proofSchema.Validate(decode(t, b)) == nil {
			t.Errorf("the proof schema accepts %s", name)
		}
	}
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
