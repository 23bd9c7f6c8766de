// Package envelope owns the invitation-email/v1 envelope: the JSON object an
// invitation email carries between the exact lines
//
//	---BEGIN CONSENSUS INVITATION V1---
//	---END CONSENSUS INVITATION V1---
//
// The issuer (internal/mail) fills an [Envelope] and writes it with
// [Envelope.Block]; the invited agent (internal/ingest, then the client
// runtime) finds the block with [ExtractBlock] or [FindBlocks] and validates
// it with [Parse]: one JSON object without duplicate keys, the embedded
// schemas/invitation-email/v1.json, then the agent guide's five checks under
// a [Policy]: the invite URI is HTTPS on the pinned origin; the exchange (and
// claim and docs) URLs use the same origin; the invitation UUID is the same in
// the envelope and every path; the invite fragment is exactly
// secret=<base64url>; the email proof sits in this envelope and is well
// formed. A refusal is a [*CheckError] naming the check. The action URLs
// follow internal/agentroute.
//
// The envelope carries two private credentials, the fragment secret and the
// email proof. [Envelope] and [Invitation] redact them in every formatted,
// logged or JSON-encoded form; only [Envelope.WireJSON] and [Envelope.Block],
// which write the email itself, reveal them. No error message quotes an
// envelope value.
//
// The package is pure: no network, no files, no clock. The schema is read
// from the embedded copy and loading any other URL is refused.
package envelope
