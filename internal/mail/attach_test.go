package mail

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/mailsink"
)

func TestComposeThreads(t *testing.T) {
	t.Parallel()
	m := testMessage()
	m.References = []string{"root.1@consensus.md", "agree-1@agents.example"}
	raw, err := Compose(m)
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !bytes.Contains(head, []byte("Subject: CONSENSUS.md: Budget 2026\r\nIn-Reply-To: <agree-1@agents.example>\r\nReferences: <root.1@consensus.md> <agree-1@agents.example>\r\nMime-Version: 1.0\r\n")) {
		t.Fatalf("threading fields:\n%s", head)
	}
	h, _ := readComposed(t, raw)
	refs, err := h.MsgIDList("References")
	if err != nil || len(refs) != 2 || refs[0] != "root.1@consensus.md" {
		t.Fatalf("References %v, %v", refs, err)
	}
	// A reference Compose could not write safely refuses the message.
	for _, bad := range []string{"no-at-sign", "a@b\r\nBcc: x@y", "two@at@signs", "<x@y>"} {
		m.References = []string{bad}
		if _, err := Compose(m); !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("reference %q: %v", bad, err)
		}
	}
}

func TestComposeAttachmentArrivesIntact(t *testing.T) {
	t.Parallel()
	m := testMessage()
	m.Body = "The outcome: reached.\nCONSENSUS.md is attached.\n"
	// Bare LFs, a CR, non-ASCII and a long line: base64 keeps every byte.
	file := []byte("# CONSENSUS.md\n\nAgreed — ünïcode\r\nline\r" + strings.Repeat("x", 1200) + "\n")
	m.Attachments = []Attachment{{Name: "CONSENSUS.md", ContentType: "text/markdown; charset=utf-8", Body: file}}
	raw, err := Compose(m)
	if err != nil {
		t.Fatal(err)
	}
	_, parts, err := mailsink.Parts(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || parts[0].Attachment || !parts[1].Attachment {
		t.Fatalf("parts %+v, want the text then one attachment", parts)
	}
	text, got := string(parts[0].Body), parts[1].Body
	if text != strings.ReplaceAll(m.Body, "\n", "\r\n") {
		t.Errorf("body %q", text)
	}
	if parts[1].Filename != "CONSENSUS.md" || parts[1].MediaType != "text/markdown" {
		t.Errorf("attachment %q %q", parts[1].Filename, parts[1].MediaType)
	}
	if sha256.Sum256(got) != sha256.Sum256(file) {
		t.Errorf("the attachment changed in transit:\n%q\n%q", got, file)
	}
	for _, a := range []Attachment{{Name: "", ContentType: "text/plain"}, {Name: `a"b`, ContentType: "text/plain"}, {Name: "a", ContentType: "text/plain\r\nX: y"}} {
		m.Attachments = []Attachment{a}
		if _, err := Compose(m); !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("attachment %+v: %v", a, err)
		}
	}
}

func TestMessageID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{" <agree-1@agents.example> ": "agree-1@agents.example", "x@y": "x@y", "<a b@c>": "", "sha256:ab": "", "": ""} {
		got, ok := MessageID(in)
		if got != want || ok != (want != "") {
			t.Errorf("MessageID(%q) = %q, %v", in, got, ok)
		}
	}
}
