package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Text from the service or from a file (an audit entry, a key's or a
// participant's name, an agreement's title, a problem's detail) is the
// text of whoever wrote it, and a terminal acts on some characters instead
// of showing them: ESC starts a sequence that can clear the screen or
// recolour it, a right-to-left override (U+202E) shows what follows
// reversed. Every text the command line shows a person passes through
// terminalText, by way of terminalWriter.

// terminalText returns s with each character a terminal would act on, or
// that changes how the text around it reads without showing itself,
// written as a JSON escape (\u001b, \u202e; a character beyond U+FFFF as
// its two UTF-16 halves): the controls (C0, DEL, C1; tab and newline
// included), the format characters (Unicode category Cf: the bidirectional
// marks, embeddings, overrides and isolates U+200E, U+200F, U+202A to
// U+202E, U+2066 to U+2069, U+061C, the zero-width characters, soft hyphen,
// byte order mark and tag characters), the line and paragraph separators
// U+2028 and U+2029, and a byte that is not UTF-8 (as \ufffd). Since
// these escapes are JSON's own and such characters appear in a JSON
// document only inside strings, a JSON document stays valid and means the
// same after it.
func terminalText(s string) string {
	i := strings.IndexFunc(s, unsafeRune)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		if !unsafeRune(r) {
			b.WriteRune(r)
			continue
		}
		if r > 0xFFFF {
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// unsafeRune reports whether terminalText escapes r. A byte that is not
// UTF-8 is ranged over as utf8.RuneError (U+FFFD), indistinguishable from
// a real U+FFFD, so both are escaped.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' || r == utf8.RuneError
}

// terminalWriter writes to w what is written to it through terminalText,
// keeping the newlines and tabs between pieces, which are the layout the
// command line itself writes (lines, table columns). A character split
// across two writes is held until its end arrives.
type terminalWriter struct {
	w io.Writer
	// tty: w is a terminal (isTerminal looks through the writer).
	tty     bool
	pending []byte
}

func (t *terminalWriter) Write(p []byte) (int, error) {
	b := append(t.pending, p...)
	t.pending = nil
	if cut := incompleteTail(b); cut < len(b) {
		t.pending = append([]byte(nil), b[cut:]...)
		b = b[:cut]
	}
	var out strings.Builder
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\n\t")
		if i < 0 {
			out.WriteString(terminalText(string(b)))
			break
		}
		out.WriteString(terminalText(string(b[:i])))
		out.WriteByte(b[i])
		b = b[i+1:]
	}
	if _, err := io.WriteString(t.w, out.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// incompleteTail returns where the last, incomplete UTF-8 character of b
// begins, or len(b) when b ends on a whole character (or on bytes that
// can never begin one).
func incompleteTail(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

// forPeople returns w as the command line writes text for people to it:
// through a terminalWriter (w itself when it is one already).
func forPeople(w io.Writer) io.Writer {
	if _, ok := w.(*terminalWriter); ok || w == nil {
		return w
	}
	return &terminalWriter{w: w, tty: isTerminal(w)}
}

// forTerminal returns w through a terminalWriter when w is a terminal,
// and w unchanged otherwise: what goes to a file or a pipe (a JSON export
// that `consensus verify audit` checks) keeps its exact bytes.
func forTerminal(w io.Writer) io.Writer {
	if isTerminal(w) {
		return forPeople(w)
	}
	return w
}
