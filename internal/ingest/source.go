package ingest

import (
	"context"
	"errors"
)

// Source yields raw messages that have not been processed yet and marks them
// done. A message a caller leaves unmarked (for example one that failed a
// check and is left alone) is not yielded again by the same Source value; a
// new Source (a restart) yields it once more. Implementations are meant for
// one goroutine; Close may be called from another to stop a blocked Fetch.
type Source interface {
	// Fetch blocks until at least one unseen message is available, ctx ends
	// or the source is closed; it returns the messages with opaque IDs.
	Fetch(ctx context.Context) ([]RawMessage, error)
	// MarkSeen marks the message with that ID as processed.
	MarkSeen(ctx context.Context, id string) error
	// Close releases the source and unblocks a pending Fetch.
	Close() error
}

// RawMessage is one RFC 5322 message as stored by the mailbox.
type RawMessage struct {
	ID   string
	Body []byte
}

// ErrClosed is returned by a Source used after Close.
var ErrClosed = errors.New("ingest: source closed")

// ErrUnknownMessage is returned by MarkSeen for an ID the source did not
// issue or no longer knows (for example after the mailbox was recreated).
var ErrUnknownMessage = errors.New("ingest: unknown message id")
