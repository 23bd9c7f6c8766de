package ingest

import "github.com/consensus-md/consensus/internal/envelope"

// ExtractBlock is envelope.ExtractBlock, which owns the block finder now.
// The name stays only so httpapi's tests compile until they call envelope
// directly; then this file goes.
var ExtractBlock = envelope.ExtractBlock
