package reply

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/consensus-md/consensus/internal/record"
)

const d64 = "07fe5fb752be0f8d6d3c55a1e1f8bb7a3f0f0a4ce7dcd7e28a16eae1bd4a0c11"

func TestRead(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text, action, digest, body string
	}{
		{"AGREE 07fe5fb752be", "agree", "07fe5fb752be", ""},
		{"agree " + d64, "agree", d64, ""},
		{"  Disagree 07FE5FB752BE  \nbecause", "disagree", "07fe5fb752be", ""},
		{"ABSTAIN 07fe5fb752be", "abstain", "07fe5fb752be", ""},
		{"AGREE", "comment", "", "AGREE"},
		{"AGREE 07fe5fb752b", "comment", "", "AGREE 07fe5fb752b"},
		{"AGREE 07fe5fb752be please", "comment", "", "AGREE 07fe5fb752be please"},
		{"I AGREE 07fe5fb752be", "comment", "", "I AGREE 07fe5fb752be"},
		{"Looks good.", "comment", "", "Looks good."},
		{"", "comment", "", ""},
	}
	for _, c := range cases {
		got := Read(c.text)
		if got.Action != c.action || got.Digest != c.digest || got.Body != c.body {
			t.Errorf("Read(%q) = %+v, want %s %q %q", c.text, got, c.action, c.digest, c.body)
		}
	}
}

func TestNewText(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"Fine by me.\n\nOn Fri, 4 Dec 2026 at 10:00, Consensus <c@x> wrote:\n> AGREE 07fe5fb752be", "Fine by me."},
		{"Fine.\nOn Fri, 4 Dec 2026 at 10:00, Consensus\n<c@x> wrote:\n> hi", "Fine."},
		{"Top.\n> AGREE 07fe5fb752be\n> more", "Top."},
		{"Hi\n\n---------- Forwarded message ---------\nAGREE 07fe5fb752be", "Hi"},
		{"Hi\n-----Original Message-----\nAGREE x", "Hi"},
		{"Hi\n\nFrom: Consensus\nSent: Friday\nTo: a\nSubject: invitation\nAGREE x", "Hi"},
		{"Hi\n-- \nAlice, sent from a phone", "Hi"},
		{"Le 4 déc. 2026, Consensus a écrit :\n> AGREE", ""},
		{"AGREE 07fe5fb752be\r\n\r\nOn Fri, X wrote:\r\n> old", "AGREE 07fe5fb752be"},
		{"From: is fine as a first word here\nno block", "From: is fine as a first word here\nno block"},
	}
	for _, c := range cases {
		if got := NewText(c.in); got != c.want {
			t.Errorf("NewText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestHTMLText(t *testing.T) {
	t.Parallel()
	got := NewText(HTMLText(`<html><head><style>p{}</style></head><body><p>AGREE 07fe5fb752be</p><div class="gmail_quote">On Fri wrote:<blockquote>DISAGREE</blockquote></div></body></html>`))
	if got != "AGREE 07fe5fb752be" {
		t.Errorf("got %q", got)
	}
	if got := HTMLText("a &amp; b<br>c"); got != "a & b\nc" {
		t.Errorf("entities and breaks: %q", got)
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	raw := "From: a@b.test\r\nMIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=X\r\n\r\n--X\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>html</p>\r\n--X\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nd=E9j=E0 vu\r\n--X--\r\n"
	got, err := Text([]byte(raw))
	if err != nil || strings.TrimSpace(got) != "déjà vu" {
		t.Fatalf("Text = %q, %v", got, err)
	}
}

func TestAligned(t *testing.T) {
	t.Parallel()
	cases := []struct {
		signer, domain string
		want           bool
	}{
		{"example.org", "example.org", true},
		{"Example.ORG", "example.org", true},
		{"mail.example.org", "example.org", true},
		{"example.org", "eu.example.org", true},
		{"a.example.org", "b.example.org", false},
		{"badexample.org", "example.org", false},
		{"example.org", "example.net", false},
		{"org", "example.org", false},
		{"", "example.org", false},
	}
	for _, c := range cases {
		if got := record.Aligned(c.signer, c.domain); got != c.want {
			t.Errorf("Aligned(%q, %q) = %v, want %v", c.signer, c.domain, got, c.want)
		}
	}
}

// FuzzReplyText: reading any message never panics, and what is read is
// valid UTF-8 whose intent is a known action.
func FuzzReplyText(f *testing.F) {
	f.Add([]byte("From: a@b.test\r\nContent-Type: text/plain\r\n\r\nAGREE 07fe5fb752be\r\n> quoted\r\n"))
	f.Add([]byte("Content-Type: text/html\r\n\r\n<p>x</p><blockquote>y"))
	f.Add([]byte("Content-Type: multipart/mixed; boundary=q\r\n\r\n--q\r\nContent-Transfer-Encoding: base64\r\n\r\n!!\r\n--q--"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		text, err := Text(raw)
		if err != nil {
			return
		}
		in := Read(NewText(text))
		switch in.Action {
		case "agree", "disagree", "abstain", "comment":
		default:
			t.Fatalf("action %q", in.Action)
		}
		if in.Action != "comment" && in.Body != "" {
			t.Fatal("a decision carries a body")
		}
		_ = utf8.ValidString(in.Body)
		_, _ = headerFields(raw)
	})
}
