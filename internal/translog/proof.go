package translog

import (
	"encoding/base64"
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

// FailedChecks names the checks that failed, in the order they ran.
func (r Result) FailedChecks() []string {
	var out []string
	for _, c := range r.Checks {
		if !c.OK {
			out = append(out, c.Name)
		}
	}
	return out
}

// add records a check: passed with what it found, or failed with err.
func (r *Result) add(name, passed string, err error) bool {
	c := Check{Name: name, OK: err == nil, Detail: passed}
	if err != nil {
		c.Detail = err.Error()
	}
	r.Checks = append(r.Checks, c)
	return err == nil
}

// proofMembers are the members of a bundle, each required.
var proofMembers = []string{"type", "leaf", "leafIndex", "inclusionProof", "checkpoint", "logKey"}

// ParseProof reads a bundle strictly: every member present, spelt exactly
// (encoding/json alone would match "LeafIndex" to leafIndex), once, and
// nothing else.
func ParseProof(b []byte) (Proof, error) {
	bad := func(err error) (Proof, error) { return Proof{}, fmt.Errorf("not a %s bundle: %w", ProofType, err) }
	if _, err := canon.Transform(b); err != nil { // refuses duplicate members
		return bad(err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return bad(err)
	}
	for _, m := range proofMembers {
		if _, ok := members[m]; !ok {
			return bad(fmt.Errorf("no member %q", m))
		}
	}
	if len(members) != len(proofMembers) {
		return bad(fmt.Errorf("members other than %s", strings.Join(proofMembers, ", ")))
	}
	var p Proof
	if err := strictUnmarshal(b, &p); err != nil {
		return bad(err)
	}
	if p.Type != ProofType {
		return bad(fmt.Errorf("type %q", p.Type))
	}
	return p, nil
}

// VerifyProof checks a bundle and reports each check by name, in order:
// leaf (a canonical record leaf), leaf-matches-record (when opt.Record is
// given and the leaf is valid), log-signature (the checkpoint carries the
// log's signature and names the log key's origin; when it fails nothing
// else is checked, as nothing else can be trusted), inclusion (the proof
// leads from the leaf's canonical bytes at its index to the checkpoint's
// root, whether or not they form a valid leaf), and cosignatures (when
// witnesses or a minimum are given: at least opt.MinCosignatures distinct
// witnesses of opt.Witnesses cosigned that checkpoint).
func VerifyProof(p Proof, opt VerifyOptions) Result {
	var r Result
	leafBytes, leafErr := canon.Transform(p.Leaf)
	err := leafErr
	if err == nil {
		r.Leaf, err = ParseLeaf(leafBytes)
	}
	if err == nil && r.Leaf.Kind != KindRecord {
		err = fmt.Errorf("the leaf is a %s leaf, not a record leaf", r.Leaf.Kind)
	}
	if r.add("leaf", fmt.Sprintf("a record leaf of agreement %s, revision %d", r.Leaf.AgreementID, r.Leaf.Revision), err) && opt.Record != nil {
		r.add("leaf-matches-record", "its digest, agreement, revision, seq, chain head and instant are the record's", leafMatchesRecord(r.Leaf, opt.Record))
	}
	n, err := openCheckpoint(p.Checkpoint, opt.LogKey)
	if err == nil {
		r.Checkpoint, err = ParseCheckpoint(n.Text)
	}
	if err == nil && r.Checkpoint.Origin != opt.LogKey.Name() {
		err = fmt.Errorf("the checkpoint's origin %q is not the log key's name %q", r.Checkpoint.Origin, opt.LogKey.Name())
	}
	var signedBy string
	if err == nil {
		signedBy = fmt.Sprintf("Ed25519 by %s+%08x over a checkpoint of %d leaves", opt.LogKey.Name(), opt.LogKey.KeyHash(), r.Checkpoint.Size)
	}
	if !r.add("log-signature", signedBy, err) {
		return r
	}
	if leafErr != nil {
		leafBytes = nil
	}
	r.add("inclusion", fmt.Sprintf("leaf %d leads to the root of the checkpoint's %d leaves", p.LeafIndex, r.Checkpoint.Size),
		checkInclusion(p, leafBytes, r.Checkpoint))
	if len(opt.Witnesses) == 0 && opt.MinCosignatures == 0 {
		return r
	}
	var refused []string
	seen := map[string]bool{}
	for _, w := range opt.Witnesses {
		id := fmt.Sprintf("%s+%08x", w.Name(), w.KeyHash())
		if seen[id] {
			continue
		}
		seen[id] = true
		switch cosigned(n, w) {
		case sigValid:
			r.Cosigned = append(r.Cosigned, w.Name())
		case sigInvalid:
			refused = append(refused, id)
		}
	}
	err = nil
	if len(r.Cosigned) < opt.MinCosignatures {
		err = fmt.Errorf("%d of the named witnesses cosigned (%s), at least %d wanted",
			len(r.Cosigned), strings.Join(r.Cosigned, ", "), opt.MinCosignatures)
	}
	if err != nil && len(refused) > 0 {
		err = fmt.Errorf("%w; the cosignature of %s does not verify", err, strings.Join(refused, ", "))
	}
	r.add("cosignatures", fmt.Sprintf("%d of at least %d: %s", len(r.Cosigned), opt.MinCosignatures, strings.Join(r.Cosigned, ", ")), err)
	return r
}

// openCheckpoint verifies the log's signature on a signed note. Every
// other signature is kept unverified, for the witnesses to be checked one
// by one: a bad cosignature is a witness's failure, not the log's.
func openCheckpoint(signed string, logKey note.Verifier) (*note.Note, error) {
	if logKey == nil {
		return nil, errors.New("no log key to check the checkpoint against")
	}
	n, err := note.Open([]byte(signed), note.VerifierList(logKey))
	if _, ok := err.(*note.UnverifiedNoteError); ok {
		return nil, fmt.Errorf("the checkpoint is not signed by the log's key %s+%08x", logKey.Name(), logKey.KeyHash())
	}
	if err != nil {
		return nil, fmt.Errorf("the checkpoint: %w", err)
	}
	return n, nil
}

type sigState int

const (
	sigAbsent sigState = iota
	sigValid
	sigInvalid
)

// cosigned finds w's signature among the note's unverified ones and
// verifies it over the note's text.
func cosigned(n *note.Note, w note.Verifier) sigState {
	state := sigAbsent
	for _, s := range n.UnverifiedSigs {
		if s.Name != w.Name() || s.Hash != w.KeyHash() {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(s.Base64)
		if err == nil && len(b) > 4 && w.Verify([]byte(n.Text), b[4:]) {
			return sigValid
		}
		state = sigInvalid
	}
	return state
}

func checkInclusion(p Proof, leafBytes []byte, c Checkpoint) error {
	if leafBytes == nil {
		return errors.New("no leaf bytes to prove: the leaf is not JSON")
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

// leafMatchesRecord checks that a record leaf is the leaf of the record
// bytes, naming the members that differ.
func leafMatchesRecord(l Leaf, record []byte) error {
	want, err := RecordLeaf(record)
	if err != nil {
		return fmt.Errorf("the record gives no leaf: %w", err)
	}
	str := func(p *string) string {
		if p == nil {
			return "null"
		}
		return *p
	}
	num := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	var diff []string
	for _, d := range []struct {
		name string
		same bool
	}{
		{"digest (the record's SHA-256)", str(l.Digest) == str(want.Digest)},
		{"agreementId", l.AgreementID == want.AgreementID},
		{"revision", l.Revision == want.Revision},
		{"seq (event_count)", num(l.Seq) == num(want.Seq)},
		{"chainHead", str(l.ChainHead) == str(want.ChainHead)},
		{"at (issued_at)", l.At == want.At},
	} {
		if !d.same {
			diff = append(diff, d.name)
		}
	}
	if len(diff) > 0 {
		return fmt.Errorf("the leaf does not describe this record: %s differ", strings.Join(diff, ", "))
	}
	return nil
}
