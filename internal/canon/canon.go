package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gowebpki/jcs"
)

// ErrDigestSyntax is returned by ParseDigest for anything but 64 lowercase hex
// characters, optionally prefixed with "sha256:".
var ErrDigestSyntax = errors.New("digest must be 64 lowercase hex characters, optionally prefixed with sha256")

// ErrInvalidJSON is returned by Transform for input that is not exactly one
// I-JSON value (RFC 7493): invalid syntax, invalid UTF-8, a lone surrogate
// or a duplicate member name.
var ErrInvalidJSON = errors.New("canon: not one valid I-JSON value")

// Transform returns the RFC 8785 canonical form of the JSON text in raw. It
// fails on invalid JSON, duplicate keys and lone surrogates.
func Transform(raw []byte) ([]byte, error) {
	// gowebpki/jcs accepts some truncated input (`{"` becomes `{}`): check
	// the text strictly first, so nothing invalid gets a digest.
	if !jsontext.Value(raw).IsValid() {
		return nil, ErrInvalidJSON
	}
	return transform(raw)
}

// transform canonicalizes JSON known to be valid.
func transform(raw []byte) ([]byte, error) {
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("canon: %w", err)
	}
	return out, nil
}

// Marshal encodes v with encoding/json and canonicalizes the result. The
// intermediate encoding escapes <, > and & but Transform re-emits every
// string minimally, so the output never carries those escapes.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("canon: encode: %w", err)
	}
	return transform(buf.Bytes()) // encoding/json wrote it: valid, no duplicates
}

// Digest returns the SHA-256 of b as 64 lowercase hex characters.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// DigestOf canonicalizes v and returns its canonical bytes and their digest.
func DigestOf(v any) ([]byte, string, error) {
	b, err := Marshal(v)
	if err != nil {
		return nil, "", err
	}
	return b, Digest(b), nil
}

// ParseDigest accepts "<hex>" or "sha256:<hex>" with exactly 64 lowercase hex
// characters and returns the bare hex. Anything else is ErrDigestSyntax.
func ParseDigest(s string) (string, error) {
	s = strings.TrimPrefix(s, "sha256:")
	if len(s) != 64 {
		return "", ErrDigestSyntax
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", ErrDigestSyntax
		}
	}
	return s, nil
}

// ZeroHash is the prev value of the first event of a chain.
const ZeroHash = "0000000000000000000000000000000000000000000000000000000000000000"

// Layouts of the two timestamp shapes the service emits: whole
// seconds for deadlines and expiries, which people and operators set; exactly
// six fractional digits for instants the service records, the precision
// PostgreSQL keeps. A fixed width means a served string never changes when
// a value's last digits happen to be zero.
const (
	secondsLayout = "2006-01-02T15:04:05Z"
	instantLayout = "2006-01-02T15:04:05.000000Z"
)

// FormatTime renders an instant the service records (an event's created_at,
// a decision, a finalization, the server clock): UTC, RFC 3339, exactly six
// fractional digits, truncated (never rounded) to the microsecond. The event
// chain hashes this string, and the API serves the same string.
func FormatTime(t time.Time) string {
	return t.UTC().Format(instantLayout)
}

// FormatSeconds renders a deadline or an expiry: UTC, RFC 3339, whole
// seconds, truncated. Callers pass values already whole (deadlines refuse
// fractions, session expiries are truncated when issued).
func FormatSeconds(t time.Time) string {
	return t.UTC().Format(secondsLayout)
}

// Now returns t truncated to the precision PostgreSQL stores (microseconds),
// so the value hashed before insert equals the value read back.
func Now(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}

// DigestBase64 returns the SHA-256 of b in standard base64, the form of an
// RFC 9530 Content-Digest value.
func DigestBase64(b []byte) string {
	sum := sha256.Sum256(b)
	return base64.StdEncoding.EncodeToString(sum[:])
}
