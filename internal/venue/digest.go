package venue

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"unicode/utf8"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// The two digests of every append, written directly in RFC 8785 form. Both
// objects have fixed ASCII keys (sorted here by hand, as JCS sorts them),
// strings and small integers only, so their canonical bytes need neither
// encoding/json nor a JCS parser; canon.DigestOf took a tenth of an
// append's CPU. digest_test.go holds them equal to canon.DigestOf.

// commandDigest is canon.DigestOf(c): the digest idempotency compares.
func commandDigest(c room.Command) string {
	return digest(commandBytes(c))
}

// commandBytes is the canonical (RFC 8785) form of c: what its digest
// hashes and, in version 2, what a keyed participant signs.
func commandBytes(c room.Command) []byte {
	b := make([]byte, 0, 512+len(c.Body))
	b = append(b, `{"action":`...)
	b = appendJCSString(b, c.Action)
	b = append(b, `,"agreement_id":`...)
	b = appendJCSString(b, c.AgreementID)
	b = append(b, `,"body":`...)
	b = appendJCSString(b, c.Body)
	if c.IdempotencyKey != "" { // version 2 only
		b = append(b, `,"idempotency_key":`...)
		b = appendJCSString(b, c.IdempotencyKey)
	}
	if c.InReplyTo != "" {
		b = append(b, `,"in_reply_to":`...)
		b = appendJCSString(b, c.InReplyTo)
	}
	b = append(b, `,"invitation_id":`...)
	b = appendJCSString(b, c.InvitationID)
	b = append(b, `,"participant_id":`...)
	b = appendJCSString(b, c.ParticipantID)
	b = append(b, `,"revision":`...)
	b = strconv.AppendInt(b, int64(c.Revision), 10)
	b = append(b, `,"revision_digest":`...)
	b = appendJCSString(b, c.RevisionDigest)
	b = append(b, `,"schema":`...)
	b = appendJCSString(b, c.Schema)
	if len(c.To) > 0 {
		b = append(b, `,"to":[`...)
		for i, id := range c.To {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJCSString(b, id)
		}
		b = append(b, ']')
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, int64(c.Version), 10)
	return append(b, '}')
}

// chainHash is sha256(JCS({prev, seq, command_digest, created_at})).
func chainHash(e store.Event) string {
	b := make([]byte, 0, 256)
	b = append(b, `{"command_digest":`...)
	b = appendJCSString(b, e.CommandDigest)
	b = append(b, `,"created_at":`...)
	b = appendJCSString(b, canon.FormatTime(e.CreatedAt))
	b = append(b, `,"prev":`...)
	b = appendJCSString(b, e.PrevHash)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, '}')
	return digest(b)
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// appendJCSString appends s as RFC 8785 writes a string: quoted, with only
// '"', '\\' and the C0 controls escaped (the five short forms, else
// \u00xx), everything else as raw UTF-8. An invalid UTF-8 byte becomes
// U+FFFD, as encoding/json makes it before canon.Marshal sees it.
func appendJCSString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
