package mail

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	gomail "github.com/emersion/go-message/mail"
)

// testMessage returns a valid message; tests change the fields they exercise.
func testMessage() *Message {
	return &Message{
		MessageID: "3f1c9a.invite@consensus.md",
		From:      "Consensus <noreply@consensus.md>",
		To:        "agent@example.org",
		Subject:   "CONSENSUS.md: Budget 2026",
		Date:      time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		Body:      "Hello.\nYou are invited.\n",
	}
}

// readComposed parses raw with go-message and returns the header and the
// decoded body.
func readComposed(t *testing.T, raw []byte) (gomail.Header, string) {
	t.Helper()
	r, err := gomail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("parse composed message: %v", err)
	}
	defer r.Close()
	p, err := r.NextPart()
	if err != nil {
		t.Fatalf("read body part: %v", err)
	}
	body, err := io.ReadAll(p.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return r.Header, string(body)
}

func TestComposeHeaders(t *testing.T) {
	t.Parallel()
	m := testMessage()
	raw, err := Compose(m)
	if err != nil {
		t.Fatalf("Compose: %v", err)
	}
	head, _, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok {
		t.Fatalf("no header/body separator in %q", raw)
	}
	want := "Message-Id: <3f1c9a.invite@consensus.md>\r\n" +
		"Date: Wed, 04 Mar 2026 05:06:07 +0000\r\n" +
		"From: \"Consensus\" <noreply@consensus.md>\r\n" +
		"To: <agent@example.org>\r\n" +
		"Subject: CONSENSUS.md: Budget 2026\r\n" +
		"Mime-Version: 1.0\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n" +
		"Content-Transfer-Encoding: 7bit"
	if string(head) != want {
		t.Errorf("header:\n got %q\nwant %q", head, want)
	}
	if bytes.Contains(bytes.ReplaceAll(raw, []byte("\r\n"), nil), []byte("\n")) {
		t.Errorf("bare LF in composed message: %q", raw)
	}

	h, body := readComposed(t, raw)
	if id, err := h.MessageID(); err != nil || id != m.MessageID {
		t.Errorf("Message-ID = %q, %v; want %q", id, err, m.MessageID)
	}
	if d, err := h.Date(); err != nil || !d.Equal(m.Date) {
		t.Errorf("Date = %v, %v; want %v", d, err, m.Date)
	}
	from, err := h.AddressList("From")
	if err != nil || len(from) != 1 || from[0].Address != "noreply@consensus.md" || from[0].Name != "Consensus" {
		t.Errorf("From = %v, %v", from, err)
	}
	to, err := h.AddressList("To")
	if err != nil || len(to) != 1 || to[0].Address != "agent@example.org" {
		t.Errorf("To = %v, %v", to, err)
	}
	if body != "Hello.\r\nYou are invited.\r\n" {
		t.Errorf("body = %q", body)
	}
}

func TestComposeNonASCIISubjectRoundTrips(t *testing.T) {
	t.Parallel()
	subjects := []string{
		"CONSENSUS.md: Budget für Café — 2026",
		"CONSENSUS.md: " + strings.Repeat("合意に達する ", 20),
		"CONSENSUS.md: =?utf-8?q?not-an-encoded-word?=",
		"  padded  ",
		"tab\there",
		"CONSENSUS.md: " + strings.Repeat("x", 200),
		"",
	}
	for _, subject := range subjects {
		m := testMessage()
		m.Subject = subject
		m.From = "Équipe Consensus <noreply@consensus.md>"
		raw, err := Compose(m)
		if err != nil {
			t.Fatalf("Compose(%q): %v", subject, err)
		}
		head, _, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
		for i, line := range strings.Split(string(head), "\r\n") {
			if len(line) > 78 {
				t.Errorf("header line %d is %d octets: %q", i, len(line), line)
			}
			for _, c := range []byte(line) {
				if c >= 0x80 {
					t.Fatalf("raw 8-bit octet in header line %q", line)
				}
			}
		}
		h, _ := readComposed(t, raw)
		got, err := h.Subject()
		if err != nil || got != subject {
			t.Errorf("Subject = %q, %v; want %q", got, err, subject)
		}
		from, err := h.AddressList("From")
		if err != nil || len(from) != 1 || from[0].Name != "Équipe Consensus" {
			t.Errorf("From = %v, %v", from, err)
		}
	}
}

func TestComposeTransferEncoding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		encoding string
	}{
		{"ascii", "plain text\nsecond line", "7bit"},
		{"line of 998", strings.Repeat("a", 998) + "\n", "7bit"},
		{"line of 999", strings.Repeat("a", 999) + "\n", "quoted-printable"},
		{"long last line", "short\n" + strings.Repeat("b", 5000), "quoted-printable"},
		{"non-ascii", "Grüße aus Zürich\n", "quoted-printable"},
		{"nul", "a\x00b\n", "quoted-printable"},
		{"qp specials", "x = 1 \t\n=?=\n.\nFrom me\n" + strings.Repeat("é", 700), "quoted-printable"},
		{"empty", "", "7bit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := testMessage()
			m.Body = tt.body
			raw, err := Compose(m)
			if err != nil {
				t.Fatalf("Compose: %v", err)
			}
			for i, line := range strings.Split(string(raw), "\r\n") {
				if len(line) > maxLineOctets {
					t.Errorf("line %d is %d octets", i, len(line))
				}
			}
			h, body := readComposed(t, raw)
			if got := h.Get("Content-Transfer-Encoding"); got != tt.encoding {
				t.Errorf("Content-Transfer-Encoding = %q, want %q", got, tt.encoding)
			}
			want := strings.ReplaceAll(tt.body, "\n", "\r\n")
			if body != want {
				t.Errorf("decoded body differs:\n got %q\nwant %q", body, want)
			}
		})
	}
}

func TestComposeKeepsCRLFBodyByteIdentical(t *testing.T) {
	t.Parallel()
	m := testMessage()
	m.Body = "Grüße\r\n" + strings.Repeat("z", 1200) + "\r\ntrailing space \r\n"
	raw, err := Compose(m)
	if err != nil {
		t.Fatalf("Compose: %v", err)
	}
	_, body := readComposed(t, raw)
	if body != m.Body {
		t.Errorf("decoded body differs:\n got %q\nwant %q", body, m.Body)
	}
}

func TestComposeRejectsInvalidInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*Message)
	}{
		{"subject CRLF injection", func(m *Message) { m.Subject = "hi\r\nBcc: victim@example.org" }},
		{"subject LF", func(m *Message) { m.Subject = "hi\nthere" }},
		{"subject CR", func(m *Message) { m.Subject = "hi\rthere" }},
		{"to injection", func(m *Message) { m.To = "a@example.org\r\nBcc: b@example.org" }},
		{"from injection", func(m *Message) { m.From = "x <a@example.org>\nBcc: b@example.org" }},
		{"message-id injection", func(m *Message) { m.MessageID = "a@b\r\nX: y" }},
		{"message-id brackets", func(m *Message) { m.MessageID = "<a@b>" }},
		{"message-id no at", func(m *Message) { m.MessageID = "abc" }},
		{"message-id empty", func(m *Message) { m.MessageID = "" }},
		{"message-id space", func(m *Message) { m.MessageID = "a b@c" }},
		{"to not an address", func(m *Message) { m.To = "not an address" }},
		{"to two addresses", func(m *Message) { m.To = "a@example.org, b@example.org" }},
		{"to empty", func(m *Message) { m.To = "" }},
		{"to utf8 mailbox", func(m *Message) { m.To = "jörg@example.org" }},
		{"from missing", func(m *Message) { m.From = "" }},
		{"invalid utf8 subject", func(m *Message) { m.Subject = "\xff" }},
		{"zero date", func(m *Message) { m.Date = time.Time{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := testMessage()
			tt.change(m)
			raw, err := Compose(m)
			if err == nil {
				t.Fatalf("Compose accepted the message:\n%s", raw)
			}
			if !errors.Is(err, ErrInvalidMessage) {
				t.Errorf("error %v does not wrap ErrInvalidMessage", err)
			}
		})
	}
	if _, err := Compose(nil); !errors.Is(err, ErrInvalidMessage) {
		t.Errorf("Compose(nil) = %v", err)
	}
}

// FuzzCompose checks that whatever Compose accepts reads back unchanged.
func FuzzCompose(f *testing.F) {
	f.Add("CONSENSUS.md: Budget", "Hello\nworld\n")
	f.Add("Grüße =?utf-8?q?x?=", strings.Repeat("é", 400)+"\r\n.\r\n")
	f.Add(strings.Repeat("長", 100), "line\rcr only\n\x00")
	f.Fuzz(func(t *testing.T, subject, body string) {
		m := testMessage()
		m.Subject, m.Body = subject, body
		raw, err := Compose(m)
		if err != nil {
			if !errors.Is(err, ErrInvalidMessage) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		for _, line := range strings.Split(string(raw), "\r\n") {
			if len(line) > maxLineOctets || strings.ContainsAny(line, "\r\n") {
				t.Fatalf("bad line %q", line)
			}
		}
		h, got := readComposed(t, raw)
		if s, err := h.Subject(); err != nil || s != subject {
			t.Errorf("Subject = %q, %v; want %q", s, err, subject)
		}
		if want := normaliseNewlines(body); got != want {
			t.Errorf("body = %q, want %q", got, want)
		}
	})
}
