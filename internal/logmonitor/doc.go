// Package logmonitor watches the service's transparency log from outside
// (SPEC §21 R-LOG-MONITOR): what `consensus log monitor` runs.
//
// Each run fetches the log's checkpoint, checks the log's signature with a
// pinned key and the witnesses' cosignatures, and compares the new tree
// with the one the monitor accepted before, whose leaf hashes it keeps
// itself: a smaller tree is a rollback, the same size with another root a
// rewrite or a split view, a larger one must carry the old tree as its
// prefix (a consistency proof from the served tiles, and the root
// recomputed from the kept hashes and the new ones). It reads every new
// entry, checks that it hashes to its leaf and is a canonical
// consensus-log-leaf/v1, and remembers each agreement's latest head, so
// that the rooms a participant can read are checked against the log: the
// head a room shows must be the head the log holds for it. Checkpoints
// seen elsewhere (another client's, a witness's) must be consistent with
// the monitor's view.
//
// The Merkle work is golang.org/x/mod/sumdb/tlog (TileHashReader
// authenticates every served tile against the checkpoint's root before a
// hash is used); signed notes are golang.org/x/mod/sumdb/note; the formats
// are internal/translog.
package logmonitor
