// Package agentclient is the invited agent's client runtime behind
// `consensus agent`. It reads invitation emails and then speaks the server's
// agent API (the routes of internal/agentroute, served by internal/httpapi
// and internal/venue) as the invited participant.
//
// One invitation goes ingest → exchange → verify → claim → room → decide →
// artifact. [Agent.Watch] reads a mailbox (an [ingest.Source]) and keeps
// each message that passes the envelope's five checks
// ([ingest.ParseMessage], internal/envelope). [Agent.Accept] exchanges the
// fragment secret (POST body only; invite_uri is never fetched), recomputes
// revisionDigest (RFC 8785 bytes of canonicalRevision) and markdownDigest and
// compares them with the exchange response and the email's envelope, then
// claims with the email proof and the envelope's inbox and keeps the
// participant token in a 0600 file of the [State] directory. [Agent.Room]
// reads the room, [Agent.Post] records a comment or a decision (by hand, or
// from an --exec program), [Agent.Artifact] downloads CONSENSUS.md. Rooms are
// addressed by invitation id. Every API URL is built by agentroute.For from
// the pinned origin and the checked invitation id, and must equal the
// envelope's exchange and claim URLs; redirects are never followed.
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
package agentclient
