package reply

import (
	"bytes"
	"errors"
	"html"
	"io"
	"regexp"
	"strings"

	message "github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // every charset a reply may use
)

// maxText bounds the decoded text read from one part.
const maxText = 1 << 20

// Text returns the reply's text: its first text/plain part that is not an
// attachment, else the text of its first text/html part, decoded from any
// transfer encoding and charset to UTF-8.
func Text(raw []byte) (string, error) {
	e, err := message.Read(bytes.NewReader(raw))
	if err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err) {
		return "", err
	}
	var plain, htmlText *string
	walkErr := e.Walk(func(_ []int, part *message.Entity, err error) error {
		if err != nil && !message.IsUnknownCharset(err) {
			return err
		}
		disp, _, _ := part.Header.ContentDisposition()
		if disp == "attachment" {
			return nil
		}
		typ, _, _ := part.Header.ContentType()
		if typ == "" {
			typ = "text/plain"
		}
		if typ != "text/plain" && typ != "text/html" {
			return nil
		}
		if (typ == "text/plain" && plain != nil) || (typ == "text/html" && htmlText != nil) {
			return nil
		}
		b, err := io.ReadAll(io.LimitReader(part.Body, maxText))
		if err != nil {
			return err
		}
		s := string(b)
		if typ == "text/plain" {
			plain = &s
		} else {
			htmlText = &s
		}
		return nil
	})
	if walkErr != nil {
		return "", walkErr
	}
	switch {
	case plain != nil:
		return *plain, nil
	case htmlText != nil:
		return HTMLText(*htmlText), nil
	}
	return "", errors.New("reply: the message has no text part")
}

var (
	htmlDropped = regexp.MustCompile(`(?is)<(script|style|head|blockquote)\b.*?</(script|style|head|blockquote)\s*>`)
	htmlQuote   = regexp.MustCompile(`(?is)<div[^>]*class="[^"]*(gmail_quote|moz-cite-prefix|OutlookMessageHeader)[^"]*".*`)
	htmlBreak   = regexp.MustCompile(`(?i)<br\s*/?>|</(p|div|li|tr|h[1-6])\s*>`)
	htmlTag     = regexp.MustCompile(`(?s)<[^>]*>`)
)

// HTMLText is the text of an HTML body: quoted blocks (blockquote, a
// mail client's quote container) dropped, line breaks kept, tags removed,
// entities decoded.
func HTMLText(s string) string {
	s = htmlDropped.ReplaceAllString(s, "")
	s = htmlQuote.ReplaceAllString(s, "")
	s = htmlBreak.ReplaceAllString(s, "\n")
	s = htmlTag.ReplaceAllString(s, "")
	return html.UnescapeString(s)
}

var (
	onWrote  = regexp.MustCompile(`(?i)^\s*(on|le|am|el)\b.*\b(wrote|a écrit|schrieb|escribió)\s*:\s*$`)
	divider  = regexp.MustCompile(`(?i)^\s*(-{2,}\s*(original message|forwarded message|weitergeleitete nachricht)\s*-{2,}|begin forwarded message:|_{10,})\s*$`)
	outlook  = regexp.MustCompile(`(?i)^\s*from:\s.+`)
	sigStart = "-- "
)

// NewText is the part of a reply's text above the quoted history: it ends
// at the first quoted line (">"), an "On … wrote:" line (also when the
// client wrapped it over two lines), a forwarded or original-message
// divider, an Outlook "From:" header block, or the signature separator.
// Line endings become "\n"; the result is trimmed.
func NewText(text string) string {
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	lines := strings.Split(text, "\n")
	end := len(lines)
	for i, l := range lines {
		t := strings.TrimSpace(l)
		joined := t
		if i+1 < len(lines) {
			joined = t + " " + strings.TrimSpace(lines[i+1])
		}
		if strings.HasPrefix(t, ">") || onWrote.MatchString(t) || divider.MatchString(t) || l == sigStart ||
			(strings.HasPrefix(strings.ToLower(t), "on ") && onWrote.MatchString(joined)) ||
			(outlook.MatchString(t) && i > 0 && strings.TrimSpace(lines[i-1]) == "") && quotedHeaderBlock(lines[i:]) {
			end = i
			break
		}
	}
	return strings.TrimSpace(strings.Join(lines[:end], "\n"))
}

// quotedHeaderBlock reports whether lines start with a From: line followed
// within four lines by a Sent:/Date: and a Subject: line (Outlook's quote).
func quotedHeaderBlock(lines []string) bool {
	var date, subject bool
	for _, l := range lines[1:min(len(lines), 5)] {
		low := strings.ToLower(strings.TrimSpace(l))
		date = date || strings.HasPrefix(low, "sent:") || strings.HasPrefix(low, "date:")
		subject = subject || strings.HasPrefix(low, "subject:")
	}
	return date && subject
}

// Intent is what a reply's new text asks for.
type Intent struct {
	// Action is agree, disagree, abstain or comment.
	Action string
	// Digest is a decision's revision digest as written (64 or 12 hex
	// characters), lower case.
	Digest string
	// Body is a comment's text.
	Body string
}

var hexDigest = regexp.MustCompile(`^([0-9a-fA-F]{64}|[0-9a-fA-F]{12})$`)

// Read reads the intent of a reply's new text: a first non-blank line of
// AGREE, DISAGREE or ABSTAIN (any case) followed by a digest of 64 or 12
// hex characters, and nothing else on the line, is that decision; any
// other text is a comment (empty when there is no text).
func Read(newText string) Intent {
	newText = strings.TrimSpace(newText)
	first, _, _ := strings.Cut(newText, "\n")
	f := strings.Fields(first)
	if len(f) == 2 && hexDigest.MatchString(f[1]) {
		switch a := strings.ToLower(f[0]); a {
		case "agree", "disagree", "abstain":
			return Intent{Action: a, Digest: strings.ToLower(f[1])}
		}
	}
	return Intent{Action: "comment", Body: newText}
}
