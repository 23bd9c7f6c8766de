package room

import "errors"

// Refusals of an event of a participant that bound a key.
var (
	// ErrSignatureRequired: the participant bound a key at claim, and the
	// event carries no Consensus-Signature.
	ErrSignatureRequired = errors.New("this participant bound an Ed25519 key at claim: every event needs a Consensus-Signature header, its signature over the canonical room-command/v2 bytes of the command (the command and its Idempotency-Key)")
	// ErrBadSignature: the Consensus-Signature is malformed, does not
	// verify over the command, or was sent by a participant without a key.
	ErrBadSignature = errors.New("the Consensus-Signature does not verify")
)
