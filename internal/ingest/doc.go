// Package ingest reads the mailbox of an invited agent and turns invitation
// emails into validated invitations.
//
// A [Source] ([IMAPSource] or [MaildirSource]) yields raw messages that have
// not been processed yet and marks them seen once handled. [ParseMessage]
// decodes one MIME message (quoted-printable, base64, charsets), searches its
// inline text/plain parts, and only those, for the invitation block, and
// validates the one block it finds with internal/envelope, which owns the
// envelope format and the agent guide's five checks. A refusal is an
// [*envelope.CheckError] naming the check; ordinary mail is [ErrNoInvitation].
//
// Nothing in this package performs a network request on behalf of an
// envelope: invite_uri is never fetched, and the secret, the proof and the
// IMAP password never appear in an error message or a log value.
package ingest
