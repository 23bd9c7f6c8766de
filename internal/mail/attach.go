package mail

import (
	"errors"
	"mime"
	"strings"

	message "github.com/emersion/go-message"
)

// Attachment is a file sent with a message, as a part of its own after
// the body: its bytes travel base64-encoded, so they arrive exactly as
// given (a SHA-256 of the decoded part equals one of Body).
type Attachment struct {
	// Name is the file name the part suggests: printable ASCII without
	// quotes or backslashes.
	Name string
	// ContentType is the part's media type with its parameters, such as
	// "text/markdown; charset=utf-8".
	ContentType string
	Body        []byte
}

func (a Attachment) validate() error {
	if a.Name == "" {
		return errors.New("no file name")
	}
	for i := 0; i < len(a.Name); i++ {
		if c := a.Name[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return errors.New("the file name is not plain printable ASCII")
		}
	}
	if strings.ContainsAny(a.ContentType, "\r\n") {
		return errors.New("the content type contains a line break")
	}
	if _, _, err := mime.ParseMediaType(a.ContentType); err != nil {
		return err
	}
	return nil
}

// writeParts writes m's body and attachments as the parts of the
// multipart message w.
func writeParts(w *message.Writer, m *Message) error {
	var text message.Header
	addTextType(&text, m.Body)
	pw, err := w.CreatePart(text)
	if err != nil {
		return err
	}
	if err := writeText(pw, m.Body); err != nil {
		return err
	}
	if err := pw.Close(); err != nil {
		return err
	}
	for _, a := range m.Attachments {
		var h message.Header
		h.Add("Content-Transfer-Encoding", "base64")
		h.Add("Content-Disposition", `attachment; filename="`+a.Name+`"`)
		h.Add("Content-Type", a.ContentType)
		pw, err := w.CreatePart(h)
		if err != nil {
			return err
		}
		if _, err := pw.Write(a.Body); err != nil {
			return err
		}
		if err := pw.Close(); err != nil {
			return err
		}
	}
	return nil
}

// MessageID returns the msg-id of a Message-ID header field's value (its
// angle brackets and surrounding blanks removed) when it is one that
// Compose accepts in References, and false otherwise: an id from another
// mailer that cannot be repeated safely is left out of a thread rather
// than make a message fail.
func MessageID(field string) (string, bool) {
	id := strings.TrimSpace(field)
	if strings.HasPrefix(id, "<") && strings.HasSuffix(id, ">") {
		id = id[1 : len(id)-1]
	}
	if validateMessageID(id) != nil {
		return "", false
	}
	return id, true
}
