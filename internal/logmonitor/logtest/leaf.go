package logtest

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/consensus-md/consensus/internal/translog"
)

// HeadLeaf is the canonical bytes of a head leaf of agreementID.
func HeadLeaf(agreementID string, seq int64, chainHead string) []byte {
	l := translog.Leaf{Type: translog.LeafType, AgreementID: agreementID, Kind: translog.KindHead,
		Revision: 1, Seq: &seq, ChainHead: &chainHead, At: "2026-09-01T12:00:00.000000Z"}
	b, err := l.Bytes()
	if err != nil {
		panic(err)
	}
	return b
}

// ChainHead is a made-up chain head: the hex SHA-256 of s.
func ChainHead(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
