// Package mcpfacade is the Model Context Protocol face of the participant
// API: an MCP server (the official Go SDK, streamable HTTP) whose tools read
// the room, wait for it to change, give the bytes a keyed participant
// signs, post advisory events, decide (signed or not, as REST) and fetch
// the artifact and the record for one claimed participant.
//
// It adds no power the REST API lacks: every tool calls the same venue use
// case as the matching REST route, with the principal the participant
// middleware authenticated for this very HTTP request, so every rule of the
// agent API (revision and digest pinning, idempotency, one terminal
// decision, the event limit, a closed room) holds unchanged. The handler is
// stateless: each HTTP request is authenticated on its own, so a revoked
// token is refused on the next call, not at the end of a session.
//
// Text written by participants (event bodies) is returned wrapped in
// labelled markers with a per-response random boundary, and the structured
// results carry it in objects marked untrusted: it is data to weigh, never
// instructions.
package mcpfacade
