package translog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/canon"
)

// LeafType is the type member of every leaf.
const LeafType = "consensus-log-leaf/v1"

// The kinds of milestone a leaf records.
const (
	// KindRevision: a revision was locked; Digest is its revision digest.
	KindRevision = "revision"
	// KindHead: the room's events changed since the last integration;
	// Seq and ChainHead are its head then.
	KindHead = "head"
	// KindRecord: the final consensus-record/v1 was issued; Digest is the
	// SHA-256 of its bytes, Seq and ChainHead the record's event_count and
	// chain_head.
	KindRecord = "record"
)

// Leaf is a consensus-log-leaf/v1. Every member is present in its bytes;
// a member that does not apply to the kind is null. Hashes are 64
// lowercase hex characters, as in the record; At is the milestone's own
// instant (a revision's lock, the head event's creation, the record's
// issue), formatted as the service formats instants.
type Leaf struct {
	Type        string  `json:"type"`
	AgreementID string  `json:"agreementId"`
	Kind        string  `json:"kind"`
	Revision    int     `json:"revision"`
	Seq         *int64  `json:"seq"`
	ChainHead   *string `json:"chainHead"`
	Digest      *string `json:"digest"`
	At          string  `json:"at"`
}

// Bytes returns the leaf's RFC 8785 canonical bytes: what the log hashes
// and what an entry bundle holds. A leaf whose strings hold only printable
// ASCII other than '"' and '\\' (every leaf the service writes: ids, hex
// digests, kinds and instants) is written directly, members in the
// canonical order, as RFC 8785 would write it; any other goes through the
// general canonicalizer. The integrator writes thousands a second, and
// encoding then canonicalizing each was most of its CPU.
func (l Leaf) Bytes() ([]byte, error) {
	if b, ok := l.plainBytes(); ok {
		return b, nil
	}
	b, err := canon.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("translog: leaf bytes: %w", err)
	}
	return b, nil
}

// plainBytes writes the canonical bytes of a leaf whose strings need no
// escaping; ok is false for any other. The members in RFC 8785 order
// (UTF-16 code units, here plain ASCII): agreementId, at, chainHead,
// digest, kind, revision, seq, type.
func (l Leaf) plainBytes() ([]byte, bool) {
	for _, s := range []*string{&l.AgreementID, &l.At, l.ChainHead, l.Digest, &l.Kind, &l.Type} {
		if s != nil && !plain(*s) {
			return nil, false
		}
	}
	// Integers beyond 2^53 are written otherwise by RFC 8785.
	const exact = 1 << 53
	if l.Revision > exact || l.Revision < -exact || l.Seq != nil && (*l.Seq > exact || *l.Seq < -exact) {
		return nil, false
	}
	b := make([]byte, 0, 256)
	str := func(s *string) {
		if s == nil {
			b = append(b, "null"...)
			return
		}
		b = append(append(append(b, '"'), *s...), '"')
	}
	b = append(b, `{"agreementId":`...)
	str(&l.AgreementID)
	b = append(b, `,"at":`...)
	str(&l.At)
	b = append(b, `,"chainHead":`...)
	str(l.ChainHead)
	b = append(b, `,"digest":`...)
	str(l.Digest)
	b = append(b, `,"kind":`...)
	str(&l.Kind)
	b = append(b, `,"revision":`...)
	b = strconv.AppendInt(b, int64(l.Revision), 10)
	b = append(b, `,"seq":`...)
	if l.Seq == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *l.Seq, 10)
	}
	b = append(b, `,"type":`...)
	str(&l.Type)
	return append(b, '}'), true
}

// plain reports a string RFC 8785 writes as itself between quotes.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// Hash is the leaf's RFC 6962 leaf hash.
func (l Leaf) Hash() (tlog.Hash, error) {
	b, err := l.Bytes()
	if err != nil {
		return tlog.Hash{}, err
	}
	return tlog.RecordHash(b), nil
}

// ErrLeaf: bytes that are not a canonical consensus-log-leaf/v1.
var ErrLeaf = errors.New("not a canonical consensus-log-leaf/v1")

// ParseLeaf reads a leaf from its bytes and refuses anything whose bytes are
// not exactly the canonical form of a valid leaf: duplicate, unknown or
// case-folded members change the bytes, so they cannot pass.
func ParseLeaf(b []byte) (Leaf, error) {
	var l Leaf
	if err := strictUnmarshal(b, &l); err != nil {
		return Leaf{}, fmt.Errorf("%w: %v", ErrLeaf, err)
	}
	if err := l.Validate(); err != nil {
		return Leaf{}, err
	}
	again, err := l.Bytes()
	if err != nil || !bytes.Equal(again, b) {
		return Leaf{}, fmt.Errorf("%w: the bytes are not its canonical form", ErrLeaf)
	}
	return l, nil
}

// Validate checks the members a leaf of its kind must and must not have.
func (l Leaf) Validate() error {
	bad := func(format string, a ...any) error { return fmt.Errorf("%w: %s", ErrLeaf, fmt.Sprintf(format, a...)) }
	if l.Type != LeafType {
		return bad("type %q", l.Type)
	}
	if l.AgreementID == "" || l.At == "" || l.Revision < 1 {
		return bad("agreementId, revision and at are required")
	}
	hex := func(p *string) bool { return p != nil && isHex64(*p) }
	switch l.Kind {
	case KindRevision:
		if l.Seq != nil || l.ChainHead != nil || !hex(l.Digest) {
			return bad("a revision leaf has a digest and no seq or chainHead")
		}
	case KindHead:
		if l.Seq == nil || *l.Seq < 1 || !hex(l.ChainHead) || l.Digest != nil {
			return bad("a head leaf has seq and chainHead and no digest")
		}
	case KindRecord:
		if l.Seq == nil || *l.Seq < 0 || !hex(l.ChainHead) || !hex(l.Digest) {
			return bad("a record leaf has seq, chainHead and digest")
		}
	default:
		return bad("kind %q", l.Kind)
	}
	return nil
}

func isHex64(s string) bool {
	_, err := canon.ParseDigest(s)
	return err == nil && len(s) == 64
}

// RecordLeaf is the record leaf of a consensus-record/v1: its SHA-256, and
// the agreement, final revision, event count, chain head and issue instant
// it states. The verifiers compare a proof's leaf with it.
func RecordLeaf(record []byte) (Leaf, error) {
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
		return Leaf{}, errors.New("not a consensus-record/v1")
	}
	sum := sha256.Sum256(record)
	digest, seq, head := hex.EncodeToString(sum[:]), rec.EventCount, rec.ChainHead
	l := Leaf{Type: LeafType, AgreementID: rec.AgreementID, Kind: KindRecord,
		Revision: rec.Revisions[len(rec.Revisions)-1].Number, Seq: &seq, ChainHead: &head, Digest: &digest, At: rec.IssuedAt}
	return l, l.Validate()
}
