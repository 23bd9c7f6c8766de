package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // decode ISO-8859-*, Windows-125x and other charsets

	"github.com/consensus-md/consensus/internal/envelope"
)

// ErrNoInvitation reports a message without any invitation block: ordinary
// mail a watcher skips silently. It is never an *envelope.CheckError.
var ErrNoInvitation = errors.New("ingest: message carries no invitation block")

// Limits on an incoming message: an invitation email is a few kilobytes.
const (
	MaxMessageBytes  = 16 << 20
	maxTextPartBytes = 1 << 20
	maxParts         = 100
	maxPartDepth     = 8
)

// ParseMessage reads one RFC 5322 message, decodes its MIME tree
// (quoted-printable, base64, charsets to UTF-8) and searches the inline
// text/plain parts, and only those, for invitation blocks. Exactly one block
// across those parts is validated with envelope.Parse under p.
//
// It returns ErrNoInvitation when no text/plain part has a marker line, an
// *envelope.CheckError for a malformed block, several blocks, or a refused
// envelope, and a plain error for a message that cannot be read. Attachments
// and forwarded messages (message/rfc822) are not searched: the proof must
// come from this email's own body.
func ParseMessage(r io.Reader, p envelope.Policy) (*envelope.Invitation, error) {
	lr := &io.LimitedReader{R: r, N: MaxMessageBytes + 1}
	entity, rootErr := message.Read(lr)
	if rootErr != nil && !message.IsUnknownCharset(rootErr) && !message.IsUnknownEncoding(rootErr) {
		return nil, fmt.Errorf("ingest: read message header: %w", rootErr)
	}
	var blocks [][]byte
	parts := 0
	err := entity.Walk(func(path []int, part *message.Entity, perr error) error {
		if path == nil && perr == nil {
			perr = rootErr // Walk does not repeat the root's decoding error
		}
		parts++
		if parts > maxParts || len(path) > maxPartDepth {
			return errors.New("ingest: message has too many or too deeply nested parts")
		}
		if !isInlineText(part) {
			return nil
		}
		body, rerr := io.ReadAll(io.LimitReader(part.Body, maxTextPartBytes+1))
		if rerr != nil {
			return fmt.Errorf("ingest: read text part: %w", rerr)
		}
		if len(body) > maxTextPartBytes {
			return fmt.Errorf("ingest: text part exceeds %d bytes", maxTextPartBytes)
		}
		found, ferr := envelope.FindBlocks(body)
		if ferr != nil {
			return ferr
		}
		if len(found) > 0 && perr != nil {
			// The block is there but its charset or transfer encoding is
			// unknown, so the bytes are not the decoded envelope.
			return &envelope.CheckError{Check: envelope.CheckBlock, Detail: "invitation part has an unknown charset or transfer encoding"}
		}
		blocks = append(blocks, found...)
		return nil
	})
	if lr.N <= 0 {
		return nil, fmt.Errorf("ingest: message exceeds %d bytes", MaxMessageBytes)
	}
	if err != nil {
		var ce *envelope.CheckError
		if errors.As(err, &ce) {
			return nil, ce
		}
		return nil, fmt.Errorf("ingest: read message: %w", err)
	}
	switch len(blocks) {
	case 0:
		return nil, ErrNoInvitation
	case 1:
		return envelope.Parse(blocks[0], p)
	default:
		return nil, &envelope.CheckError{Check: envelope.CheckBlock, Detail: fmt.Sprintf("%d invitation blocks in the message; expected exactly one", len(blocks))}
	}
}

// isInlineText reports whether part is a text/plain body (the default type
// when Content-Type is absent) that is not an attachment.
func isInlineText(part *message.Entity) bool {
	if part.MultipartReader() != nil {
		return false
	}
	mediaType := "text/plain"
	if part.Header.Get("Content-Type") != "" {
		t, _, err := part.Header.ContentType()
		if err != nil {
			return false
		}
		mediaType = t
	}
	if !strings.EqualFold(mediaType, "text/plain") {
		return false
	}
	if disp, _, err := part.Header.ContentDisposition(); err == nil && strings.EqualFold(disp, "attachment") {
		return false
	}
	return true
}

// ParseMessageBytes is ParseMessage over an in-memory message.
func ParseMessageBytes(raw []byte, p envelope.Policy) (*envelope.Invitation, error) {
	return ParseMessage(bytes.NewReader(raw), p)
}
