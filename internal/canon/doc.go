// Package canon produces the canonical bytes that Consensus hashes and the
// digests it publishes.
//
// Canonical JSON is RFC 8785 (JSON Canonicalization Scheme). For the objects
// Consensus issues (ASCII keys, integers only) it equals the guide's recipe and
// Python's json.dumps(v, sort_keys=True, separators=(",", ":"),
// ensure_ascii=False). The package is pure: no I/O, no clock.
package canon
