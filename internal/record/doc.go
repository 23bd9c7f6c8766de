// Package record builds, signs and verifies consensus-record/v1: one JSON
// document that lets anyone check a finished room offline. It carries
// every locked revision in order (canonical object, Markdown, revision,
// Markdown and terms digests; the final one last), the roster
// with each participant's binding digest and bound public key, every event
// with its full room-command object, command digest, chain link and
// participant signature, the outcome, the artifact's SHA-256, and the
// service's Ed25519 signature over the canonical bytes of all of it.
//
// Verify is the offline verifier behind `consensus verify record`; the
// second, independent one is tools/verify-record.mjs. Both report failures
// under the same check names, and both run the vectors in conformance/.
// The package is pure: no I/O, no clock.
package record
