package ingest

import "github.com/consensus-md/consensus/internal/envelope"

// The envelope's types and block finder moved to internal/envelope. These
// names keep the callers outside this refactor's reach (the e2e harness,
// httpapi's tests) compiling until they name envelope directly; then this
// file goes.

// Policy is envelope.Policy.
type Policy = envelope.Policy

// Invitation is envelope.Invitation.
type Invitation = envelope.Invitation

// ExtractBlock is envelope.ExtractBlock.
var ExtractBlock = envelope.ExtractBlock
