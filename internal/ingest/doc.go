// Package ingest reads invitation emails addressed to an invited agent and
// turns them into validated invitations.
//
// An invitation email carries a JSON envelope (schema invitation-email/v1)
// between the exact lines
//
//	---BEGIN CONSENSUS INVITATION V1---
//	---END CONSENSUS INVITATION V1---
//
// of a text/plain part. [ParseMessage] decodes the MIME message, [ExtractBlock]
// finds the block and [ParseEnvelope] validates it against the embedded schema
// and the agent guide's five checks: the invite URI is HTTPS on the pinned
// origin; the exchange (and claim and docs) URLs use the same origin; the
// invitation UUID is the same in the envelope and every path; the invite
// fragment is exactly secret=<base64url>; the email proof sits in this email's
// envelope and is well formed. A failure is a [*CheckError] naming the check.
// Nothing in this package performs a network request on behalf of an envelope:
// invite_uri is never fetched, and the secret and proof never appear in an
// error message, a log value or a state file written through this package's
// types.
//
// A [Source] ([IMAPSource] or [MaildirSource]) yields raw messages that have
// not been processed yet, and [State] records which invitations were handled
// so each is processed once.
package ingest
