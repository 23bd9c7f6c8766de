package mailsink

import (
	"bytes"
	"io"

	gomail "github.com/emersion/go-message/mail"
)

// Part is one part of a message, its body decoded (go-message undoes the
// Content-Transfer-Encoding).
type Part struct {
	// Attachment is set for a part whose Content-Disposition is
	// attachment; Filename is then its file name.
	Attachment bool
	Filename   string
	// MediaType is the part's media type without its parameters.
	MediaType string
	Body      []byte
}

// Parts reads raw (a Message's Data, or a message as internal/mail
// composes it) and returns its header and its parts in order: a message
// that is not multipart has one.
func Parts(raw []byte) (gomail.Header, []Part, error) {
	r, err := gomail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		return gomail.Header{}, nil, err
	}
	defer r.Close()
	var parts []Part
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			return r.Header, parts, nil
		}
		if err != nil {
			return r.Header, nil, err
		}
		b, err := io.ReadAll(p.Body)
		if err != nil {
			return r.Header, nil, err
		}
		part := Part{Body: b}
		switch h := p.Header.(type) {
		case *gomail.InlineHeader:
			part.MediaType, _, _ = h.ContentType()
		case *gomail.AttachmentHeader:
			part.Attachment = true
			part.Filename, _ = h.Filename()
			part.MediaType, _, _ = h.ContentType()
		}
		parts = append(parts, part)
	}
}
