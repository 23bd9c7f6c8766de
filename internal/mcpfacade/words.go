package mcpfacade

import "strings"

// mcpWords says a refusal in MCP's words. The use cases and the problem
// table speak REST, whose signature, idempotency key and retry delay travel
// in headers; a tool call has no headers: they are its arguments
// (signature, idempotencyKey) and a member of the refusal
// (retryAfterSeconds). Longer phrases come first: strings.Replacer tries
// the old strings in argument order at each position.
var mcpWords = strings.NewReplacer(
	"carry the header Consensus-Signature:", "pass the signature argument:",
	"a Consensus-Signature header", "a signature argument",
	"send no Consensus-Signature", "pass no signature argument",
	"The Consensus-Signature", "The signature argument",
	"the Consensus-Signature", "the signature argument",
	"Consensus-Signature", "signature argument",
	"the Idempotency-Key header of this request", "the idempotencyKey argument of this call",
	"the request's Idempotency-Key", "the call's idempotencyKey",
	"the Idempotency-Key of the request", "the idempotencyKey of the call",
	"Idempotency-Key", "idempotencyKey",
	"built from the request", "built from the call's arguments",
	"when the request carries them", "when the call carries them",
	"the number of seconds in Retry-After", "the number of seconds in retryAfterSeconds",
	"Retry-After seconds", "retryAfterSeconds seconds",
	"Retry-After", "retryAfterSeconds",
)

// inMCPWords is r with its texts in MCP's words.
func inMCPWords(r Refusal) Refusal {
	r.Title, r.Detail, r.Explanation = mcpWords.Replace(r.Title), mcpWords.Replace(r.Detail), mcpWords.Replace(r.Explanation)
	return r
}
