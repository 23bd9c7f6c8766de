package translog

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/canon"
)

// ProofType is the type member of a proof bundle.
const ProofType = "consensus-log-proof/v1"

// Proof is a consensus-log-proof/v1 bundle: a record's leaf, its index in
// the log, the inclusion proof (base64 hashes, leaf to root) and the
// cosigned checkpoint it is proven against (the whole signed note). LogKey
// is the log's verifier key as the service publishes it: a convenience, a
// verifier takes the key it trusts from elsewhere.
type Proof struct {
	Type           string          `json:"type"`
	Leaf           json.RawMessage `json:"leaf"`
	LeafIndex      int64           `json:"leafIndex"`
	InclusionProof []string        `json:"inclusionProof"`
	Checkpoint     string          `json:"checkpoint"`
	LogKey         string          `json:"logKey"`
}

// NewProof assembles a bundle.
func NewProof(leaf []byte, index int64, p tlog.RecordProof, checkpoint []byte, logKey string) Proof {
	hashes := make([]string, len(p))
	for i, h := range p {
		hashes[i] = base64.StdEncoding.EncodeToString(h[:])
	}
	return Proof{Type: ProofType, Leaf: leaf, LeafIndex: index, InclusionProof: hashes, Checkpoint: string(checkpoint), LogKey: logKey}
}

// VerifyOptions are what a proof is checked against.
type VerifyOptions struct {
	// LogKey verifies the checkpoint's log signature (required).
	LogKey note.Verifier
	// Record, when set, is the consensus-record/v1 bytes the leaf must
	// describe.
	Record []byte
	// Witnesses are the witnesses whose cosignatures count, and
	// MinCosignatures how many of them must have cosigned.
	Witnesses       []note.Verifier
	MinCosignatures int
}

// Check is one named check of a proof and its result.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Result is what VerifyProof found: every check it ran, in order, and the
// parsed parts for the caller to print.
type Result struct {
	Checks     []Check
	Leaf       Leaf
	Checkpoint Checkpoint
	Cosigned   []string // the names of the witnesses whose cosignature verified
}

// OK reports that every check passed.
func (r Result) OK() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return len(r.Checks) > 0
}

// FailedChecks names the checks that failed.
func (r Result) FailedChecks() []string {
	var out []string
	for _, c := range r.Checks {
		if !c.OK {
			out = append(out, c.Name+": "+c.Detail)
		}
	}
	return out
}

func (r *Result) add(name string, err error) bool {
	c := Check{Name: name, OK: err == nil}
	if err != nil {
		c.Detail = err.Error()
	}
	r.Checks = append(r.Checks, c)
	return err == nil
}

// ParseProof reads a bundle strictly: unknown members are refused.
func ParseProof(b []byte) (Proof, error) {
	if _, err := canon.Transform(b); err != nil { // refuses duplicate members
		return Proof{}, fmt.Errorf("not a %s bundle: %w", ProofType, err)
	}
	var p Proof
	if err := strictUnmarshal(b, &p); err != nil {
		return Proof{}, fmt.Errorf("not a %s bundle: %w", ProofType, err)
	}
	if p.Type != ProofType {
		return Proof{}, fmt.Errorf("not a %s bundle: type %q", ProofType, p.Type)
	}
	return p, nil
}

// VerifyProof checks a bundle: the leaf is a canonical record leaf (and
// describes opt.Record when given), the checkpoint carries the log's
// signature, the inclusion proof leads from the leaf at its index to the
// checkpoint's root, and at least opt.MinCosignatures of opt.Witnesses
// cosigned that checkpoint. It runs every check it can and reports each.
func VerifyProof(p Proof, opt VerifyOptions) Result {
	var r Result
	leafBytes, err := canon.Transform(p.Leaf)
	if err == nil {
		r.Leaf, err = ParseLeaf(leafBytes)
	}
	if err == nil && r.Leaf.Kind != KindRecord {
		err = fmt.Errorf("the leaf is a %s leaf, not a record leaf", r.Leaf.Kind)
	}
	leafOK := r.add("leaf", err)
	if opt.Record != nil && leafOK {
		r.add("leaf-matches-record", leafMatchesRecord(r.Leaf, opt.Record))
	}
	if opt.LogKey == nil {
		r.add("log-signature", errors.New("no log key to check the checkpoint against"))
		return r
	}
	n, err := note.Open([]byte(p.Checkpoint), note.VerifierList(append([]note.Verifier{opt.LogKey}, opt.Witnesses...)...))
	if err == nil && !signedBy(n, opt.LogKey) {
		err = errors.New("the checkpoint is not signed by the log's key")
	}
	if err == nil {
		r.Checkpoint, err = ParseCheckpoint(n.Text)
	}
	if err == nil && r.Checkpoint.Origin != opt.LogKey.Name() {
		err = fmt.Errorf("the checkpoint's origin %q is not the log key's name %q", r.Checkpoint.Origin, opt.LogKey.Name())
	}
	if !r.add("log-signature", err) {
		return r
	}
	r.add("inclusion", checkInclusion(p, leafBytes, r.Checkpoint, leafOK))
	for _, w := range opt.Witnesses {
		if signedBy(n, w) {
			r.Cosigned = append(r.Cosigned, w.Name())
		}
	}
	if len(opt.Witnesses) > 0 || opt.MinCosignatures > 0 {
		var err error
		if len(r.Cosigned) < opt.MinCosignatures {
			err = fmt.Errorf("%d of the named witnesses cosigned (%s), at least %d wanted",
				len(r.Cosigned), strings.Join(r.Cosigned, ", "), opt.MinCosignatures)
		}
		r.add("cosignatures", err)
	}
	return r
}

func signedBy(n *note.Note, v note.Verifier) bool {
	for _, s := range n.Sigs {
		if s.Name == v.Name() && s.Hash == v.KeyHash() {
			return true
		}
	}
	return false
}

func checkInclusion(p Proof, leafBytes []byte, c Checkpoint, leafOK bool) error {
	if !leafOK {
		return errors.New("no leaf to prove")
	}
	if p.LeafIndex < 0 || p.LeafIndex >= c.Size {
		return fmt.Errorf("leaf index %d is outside a tree of %d leaves", p.LeafIndex, c.Size)
	}
	proof := make(tlog.RecordProof, len(p.InclusionProof))
	for i, s := range p.InclusionProof {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) != tlog.HashSize {
			return fmt.Errorf("inclusion proof hash %d is not a base64 SHA-256", i)
		}
		copy(proof[i][:], b)
	}
	if err := tlog.CheckRecord(proof, c.Size, c.Root, p.LeafIndex, tlog.RecordHash(leafBytes)); err != nil {
		return fmt.Errorf("the proof does not lead from leaf %d to the checkpoint's root: %w", p.LeafIndex, err)
	}
	return nil
}

// leafMatchesRecord checks that a record leaf describes the record bytes:
// its SHA-256, agreement, final revision, event count, chain head and
// issue instant.
func leafMatchesRecord(l Leaf, record []byte) error {
	var rec struct {
		AgreementID string `json:"agreement_id"`
		IssuedAt    string `json:"issued_at"`
		Revisions   []struct {
			Number int `json:"number"`
		} `json:"revisions"`
		ChainHead  string `json:"chain_head"`
		EventCount int64  `json:"event_count"`
	}
	if err := json.Unmarshal(record, &rec); err != nil || len(rec.Revisions) == 0 {
		return errors.New("the record is not a consensus-record/v1")
	}
	sum := sha256.Sum256(record)
	var diff []string
	if l.Digest == nil || *l.Digest != hex.EncodeToString(sum[:]) {
		diff = append(diff, "digest (the record's SHA-256)")
	}
	if l.AgreementID != rec.AgreementID {
		diff = append(diff, "agreementId")
	}
	if l.Revision != rec.Revisions[len(rec.Revisions)-1].Number {
		diff = append(diff, "revision")
	}
	if l.Seq == nil || *l.Seq != rec.EventCount {
		diff = append(diff, "seq (event_count)")
	}
	if l.ChainHead == nil || *l.ChainHead != rec.ChainHead {
		diff = append(diff, "chainHead")
	}
	if l.At != rec.IssuedAt {
		diff = append(diff, "at (issued_at)")
	}
	if len(diff) > 0 {
		return fmt.Errorf("the leaf does not describe this record: %s differ", strings.Join(diff, ", "))
	}
	return nil
}
