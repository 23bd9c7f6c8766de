// Package translog holds the formats of the service's transparency log
// (SPEC §21), free of I/O: the consensus-log-leaf/v1 leaf, the C2SP
// tlog-checkpoint signed by the log's Ed25519 key, C2SP tlog-cosignature/v1
// verifiers for witnesses, the C2SP tlog-tiles paths and entry bundles, and
// the consensus-log-proof/v1 bundle with its offline verifier.
//
// The Merkle tree itself (RFC 6962 hashing, stored hashes, tiles, inclusion
// and consistency proofs) is golang.org/x/mod/sumdb/tlog, the Go checksum
// database's own code; signed notes are golang.org/x/mod/sumdb/note. This
// package only adapts their shapes to the C2SP texts where the two differ
// (x/mod's tile paths name the tile height and its checkpoint has a fixed
// origin line).
package translog

// TileHeight is the height of every tile, as C2SP tlog-tiles fixes it: a
// full tile holds 256 hashes.
const TileHeight = 8
