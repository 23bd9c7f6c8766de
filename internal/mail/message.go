package mail

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	netmail "net/mail"
	"strings"
	"time"
	"unicode/utf8"

	message "github.com/emersion/go-message"
	gomail "github.com/emersion/go-message/mail"
)

// Message is one outgoing email. Body is UTF-8 plain text.
type Message struct {
	MessageID string    // without angle brackets, e.g. "3f1c...@consensus.md"; stable across retries
	From      string    // RFC 5322 address, may include a display name
	To        string    // bare address
	ReplyTo   string    // bare address, or empty for no Reply-To field
	Subject   string    // may contain non-ASCII (encoded per RFC 2047)
	Date      time.Time // sent as the Date header
	// References are the Message-IDs (without angle brackets) of the
	// thread this message answers, oldest first: sent as References, and
	// the last one as In-Reply-To. None: a message that starts a thread.
	References []string
	Body       string
	// Attachments follow the body, each as a part of its own.
	Attachments []Attachment
}

// maxLineOctets is the RFC 5322 limit on a line, excluding its CRLF.
const maxLineOctets = 998

// Compose renders m as RFC 5322 bytes with CRLF line endings. The header
// holds, in this order, Message-ID, Date, From, To, Reply-To (when set),
// Subject, In-Reply-To and References (when m has references),
// MIME-Version, Content-Type (text/plain; charset=utf-8) and
// Content-Transfer-Encoding: "7bit" when the body is ASCII without NUL and
// no line exceeds 998 octets, otherwise "quoted-printable", so the body
// always arrives intact. With attachments the message is multipart/mixed:
// the body is its first part, with that type and encoding, and each
// attachment a part of its own (see Attachment).
//
// Line endings in Body are normalised to CRLF (a bare LF or CR counts as a
// line break); decoding the composed body gives Body with that normalisation.
//
// Compose returns an error wrapping ErrInvalidMessage when a field is
// missing, an address does not parse, or a header field contains CR or LF.
func Compose(m *Message) ([]byte, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: nil message", ErrInvalidMessage)
	}
	from, to, err := m.validate()
	if err != nil {
		return nil, err
	}

	// textproto.Header writes the most recently added field first, so the
	// fields are added in reverse of the order they appear on the wire.
	var h gomail.Header
	if len(m.Attachments) == 0 {
		addTextType(&h, m.Body)
	} else {
		h.Add("Content-Type", "multipart/mixed")
	}
	h.Add("MIME-Version", "1.0")
	if n := len(m.References); n > 0 {
		h.Add("References", "<"+strings.Join(m.References, "> <")+">")
		h.Add("In-Reply-To", "<"+m.References[n-1]+">")
	}
	h.Add("Subject", encodeSubject(m.Subject))
	if m.ReplyTo != "" {
		h.Add("Reply-To", m.ReplyTo)
	}
	h.Add("To", to.String())
	h.Add("From", from.String())
	h.Add("Date", m.Date.Format(time.RFC1123Z))
	h.Add("Message-Id", "<"+m.MessageID+">")

	var buf bytes.Buffer
	w, err := message.CreateWriter(&buf, h.Header)
	if err != nil {
		return nil, fmt.Errorf("mail: compose: %w", err)
	}
	if len(m.Attachments) == 0 {
		err = writeText(w, m.Body)
	} else {
		err = writeParts(w, m)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("mail: compose: %w", err)
	}
	return buf.Bytes(), nil
}

// addTextType adds the Content-Type and Content-Transfer-Encoding of the
// plain-text body to h, in h's reverse order.
func addTextType(h interface{ Add(k, v string) }, body string) {
	encoding := "7bit"
	if needsQuotedPrintable(normaliseNewlines(body)) {
		encoding = "quoted-printable"
	}
	h.Add("Content-Transfer-Encoding", encoding)
	h.Add("Content-Type", "text/plain; charset=utf-8")
}

// writeText writes body, its newlines normalised, through w.
func writeText(w io.Writer, body string) error {
	_, err := io.WriteString(w, normaliseNewlines(body))
	return err
}

// ErrInvalidMessage is wrapped by every error Compose returns for a message
// that cannot be rendered; retrying such a message cannot help.
var ErrInvalidMessage = errors.New("mail: invalid message")

// validate checks the header fields and returns the parsed addresses.
func (m *Message) validate() (from, to *netmail.Address, err error) {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidMessage}, args...)...)
	}
	for _, f := range []struct{ name, value string }{
		{"Message-ID", m.MessageID}, {"From", m.From}, {"To", m.To}, {"Subject", m.Subject}, {"Reply-To", m.ReplyTo},
		{"References", strings.Join(m.References, " ")},
	} {
		if strings.ContainsAny(f.value, "\r\n") {
			return nil, nil, invalid("%s contains a line break", f.name)
		}
		if !utf8.ValidString(f.value) {
			return nil, nil, invalid("%s is not valid UTF-8", f.name)
		}
	}
	if err := validateMessageID(m.MessageID); err != nil {
		return nil, nil, invalid("Message-ID %q: %v", m.MessageID, err)
	}
	for _, ref := range m.References {
		if err := validateMessageID(ref); err != nil {
			return nil, nil, invalid("References %q: %v", ref, err)
		}
	}
	for _, a := range m.Attachments {
		if err := a.validate(); err != nil {
			return nil, nil, invalid("attachment %q: %v", a.Name, err)
		}
	}
	if m.Date.IsZero() {
		return nil, nil, invalid("Date is not set")
	}
	from, err = parseAddress(m.From)
	if err != nil {
		return nil, nil, invalid("From %q: %v", m.From, err)
	}
	to, err = parseAddress(m.To)
	if err != nil {
		return nil, nil, invalid("To %q: %v", m.To, err)
	}
	if m.ReplyTo != "" {
		if _, err := parseAddress(m.ReplyTo); err != nil {
			return nil, nil, invalid("Reply-To %q: %v", m.ReplyTo, err)
		}
	}
	return from, to, nil
}

// parseAddress accepts one RFC 5322 address whose addr-spec is ASCII: the
// transports do not negotiate SMTPUTF8, so a UTF-8 mailbox could not be sent.
func parseAddress(s string) (*netmail.Address, error) {
	if s == "" {
		return nil, errors.New("empty address")
	}
	a, err := netmail.ParseAddress(s)
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(a.Address); i++ {
		if a.Address[i] >= utf8.RuneSelf {
			return nil, errors.New("non-ASCII mailbox is not supported")
		}
	}
	return a, nil
}

// validateMessageID accepts "left@right" made of printable ASCII without
// spaces, angle brackets or a second "@" (RFC 5322 msg-id, dot-atom form
// or a no-fold literal on the right).
func validateMessageID(id string) error {
	if id == "" {
		return errors.New("empty")
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c <= ' ' || c >= 0x7f || c == '<' || c == '>' {
			return fmt.Errorf("character %q not allowed", c)
		}
	}
	left, right, ok := strings.Cut(id, "@")
	if !ok || left == "" || right == "" || strings.Contains(right, "@") {
		return errors.New(`want exactly one "@" with text on both sides`)
	}
	return nil
}

// encodeSubject keeps a plain ASCII subject as it is and otherwise turns it
// into RFC 2047 "B" encoded-words of at most 52 octets separated by spaces,
// so go-message can fold the field into lines under 78 octets. Go's mime
// encoder is not used: it leaves ASCII text that looks like an encoded-word
// alone (which a reader would then decode) and emits 75-octet words that
// cannot be folded after "Subject: ".
func encodeSubject(s string) string {
	if subjectIsPlain(s) {
		return s
	}
	const chunk = 30 // octets of UTF-8 per word; 40 after base64
	var words []string
	for len(s) > 0 {
		n := min(chunk, len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n-- // never split a character across two words
		}
		words = append(words, "=?utf-8?b?"+base64.StdEncoding.EncodeToString([]byte(s[:n]))+"?=")
		s = s[n:]
	}
	return strings.Join(words, " ")
}

// subjectIsPlain reports whether s can be sent without encoding: printable
// ASCII, nothing a reader would take for an encoded-word, and no word too
// long to fold.
func subjectIsPlain(s string) bool {
	if strings.Contains(s, "=?") || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
		return false // leading and trailing blanks would be lost when parsed
	}
	word := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c > '~' {
			return false
		}
		if c == ' ' {
			word = 0
			continue
		}
		word++
		if word > 60 {
			return false
		}
	}
	return true
}

// normaliseNewlines turns every CRLF, bare LF and bare CR into CRLF.
func normaliseNewlines(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/32)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\r':
			b.WriteString("\r\n")
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
		case '\n':
			b.WriteString("\r\n")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// needsQuotedPrintable reports whether body (CRLF-normalised) cannot travel
// as 7bit: a non-ASCII or NUL octet, or a line longer than 998 octets.
func needsQuotedPrintable(body string) bool {
	lineLen := 0
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == '\r' || c == '\n':
			lineLen = 0
			continue
		case c == 0 || c >= 0x80:
			return true
		}
		lineLen++
		if lineLen > maxLineOctets {
			return true
		}
	}
	return false
}
