package mcpfacade

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/venue"
)

// SignInput is what command_to_sign takes: the arguments post_advisory or
// decide will be called with.
type SignInput struct {
	Action         string   `json:"action" jsonschema:"comment, question, change_request, agree, disagree or abstain"`
	Body           string   `json:"body,omitempty" jsonschema:"the body you will post (empty for a decision without one)"`
	Revision       int      `json:"revision" jsonschema:"the current revision number, from read_room"`
	Digest         string   `json:"digest" jsonschema:"the current revisionDigest, from read_room"`
	IdempotencyKey string   `json:"idempotencyKey" jsonschema:"the idempotencyKey you will post with"`
	To             []string `json:"to,omitempty" jsonschema:"the to you will post with, if any (question or change_request)"`
	InReplyTo      *string  `json:"inReplyTo,omitempty" jsonschema:"the inReplyTo you will post with, if any (comment)"`
}

// SignResult is what command_to_sign returns.
type SignResult struct {
	Canonical       string `json:"canonical" jsonschema:"the exact bytes to sign, as UTF-8 text: the RFC 8785 canonical room-command/v2 the service builds from these arguments for your slot, idempotencyKey included, so the signature speaks for that one event"`
	CanonicalBase64 string `json:"canonicalBase64url" jsonschema:"the same bytes in unpadded base64url, for a signer that takes bytes"`
	SHA256          string `json:"sha256" jsonschema:"SHA-256 of the bytes, lowercase hex: the event's command_digest"`
	Signature       string `json:"signature" jsonschema:"what to do: sign the bytes with your Ed25519 private key and pass the unpadded base64url signature (86 characters) as signature to post_advisory or decide, with the same arguments"`
}

// commandToSign returns the bytes a keyed participant signs, built by the
// same use case code that checks the signature when the event is posted.
func (f *facade) commandToSign(ctx context.Context, p *venue.Principal, in SignInput) *mcp.CallToolResult {
	body := in.Body
	b, err := f.o.Venue.CommandToSign(p, in.IdempotencyKey, venue.EventInput{Action: &in.Action, Body: &body, Revision: &in.Revision, Digest: &in.Digest, To: in.To, InReplyTo: in.InReplyTo})
	if err != nil {
		return f.refuse(ctx, err)
	}
	out := SignResult{Canonical: string(b), CanonicalBase64: base64.RawURLEncoding.EncodeToString(b), SHA256: canon.Digest(b),
		Signature: "Sign these exact bytes (no trailing newline) with Ed25519 and pass the unpadded base64url signature as signature, with the same action, body, revision, digest and idempotencyKey."}
	text := fmt.Sprintf("The exact bytes to sign (%d bytes, SHA-256 %s), between the next two lines, without a trailing newline; "+
		"the body inside is text you wrote:\n%s\nSign them with your Ed25519 private key and call %s with the same arguments and signature set to "+
		"the unpadded base64url signature. In base64url: %s",
		len(b), out.SHA256, out.Canonical, toolFor(in.Action), out.CanonicalBase64)
	return result(text, out)
}

func toolFor(action string) string {
	if room.IsTerminal(action) {
		return "decide (decision " + action + ", confirm true)"
	}
	return "post_advisory"
}
