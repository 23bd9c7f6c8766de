// Package mail composes the outgoing emails of Consensus and delivers them.
//
// An invitation email is [NewEnvelope], [InvitationSubject] and
// [InvitationBody]: a few lines for a person around the invitation-email/v1
// block, whose format (type, marker lines, wire encoding) internal/envelope
// defines for writer and reader alike.
//
// Compose renders a Message as RFC 5322 bytes (plain UTF-8 text, 7bit or
// quoted-printable). A Transport delivers one message at a time; Open builds
// one from a CONSENSUS_MAIL_URL: a Maildir (maildir:///path, the local
// default) or an SMTP submission server (smtp:// with STARTTLS, smtps:// with
// implicit TLS). Transports classify failures: a *PermanentError means the
// message can never be delivered as is, anything else is worth retrying.
//
// The outbox worker that drives the transports lives elsewhere; this package
// holds no state between sends.
package mail
