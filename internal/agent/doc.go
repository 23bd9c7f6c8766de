// Package agent is the invited agent's runtime behind `consensus agent`.
//
// Watch reads a mailbox (an [ingest.Source]), validates each invitation with
// the five checks of [ingest.ParseMessage], exchanges the fragment secret
// (POST body only; invite_uri is never fetched), recomputes revisionDigest
// (RFC 8785 bytes of canonicalRevision) and markdownDigest and compares them
// with the exchange response and the email's envelope before claiming, then
// claims with the email proof and the envelope's inbox and keeps the
// participant token in a 0600 file of the [State] directory. Rooms are
// addressed by invitation id. Every API URL is derived from the envelope's
// exchange URL, which the checks pinned to the configured origin; redirects
// are never followed.
//
// Room commands are made crash-safe by persisting the command and its
// Idempotency-Key before the request ([Agent.Post]); a later run replays the
// same key and the server answers 200 with the original event. Artifacts
// are written only when their bytes match both Content-Digest and
// X-Consensus-SHA256.
//
// Credentials (invite secret, email proof, session and participant tokens,
// the IMAP password) are never printed or logged, never passed to an --exec
// program, and never sent anywhere but the pinned API.
package agent
