package ingest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/envelope/envelopetest"
)

// The fixtures under testdata/mail are complete RFC 5322 messages with CRLF
// line endings, as a mail server stores them.
func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "mail", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file  string
		title string
	}{
		{"plain-7bit.rfc822", "Ship v2 on Friday"},
		{"quoted-printable.rfc822", "Livraison v2 prévue vendredi — ✓"},
		{"multipart-base64.rfc822", "Ship v2 on Friday"},
		{"iso-8859-1.rfc822", "Réunion à Zürich"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			inv, err := ParseMessageBytes(readFixture(t, tt.file), envelope.Policy{})
			if err != nil {
				t.Fatalf("ParseMessage: %v", err)
			}
			if inv.Envelope.Title != tt.title {
				t.Errorf("title = %q, want %q", inv.Envelope.Title, tt.title)
			}
			if inv.InvitationID != envelopetest.InvitationID || inv.Secret != envelopetest.Secret || inv.EmailProof != envelopetest.Proof {
				t.Errorf("credentials or id not decoded intact")
			}
		})
	}
}

func TestParseMessageRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file   string
		noInv  bool
		check  string
		reason string
	}{
		{"unrelated.rfc822", true, "", "ordinary mail is skipped"},
		{"attachment-only.rfc822", true, "", "attachments and forwarded messages are not this email's body"},
		{"two-blocks.rfc822", false, envelope.CheckBlock, "one block per message"},
		{"truncated.rfc822", false, envelope.CheckBlock, "BEGIN without END"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			inv, err := ParseMessageBytes(readFixture(t, tt.file), envelope.Policy{})
			if inv != nil {
				t.Fatalf("accepted (%s)", tt.reason)
			}
			if tt.noInv {
				if !errors.Is(err, ErrNoInvitation) {
					t.Fatalf("err = %v, want ErrNoInvitation (%s)", err, tt.reason)
				}
				var ce *envelope.CheckError
				if errors.As(err, &ce) {
					t.Fatal("ErrNoInvitation must not be a envelope.CheckError")
				}
				return
			}
			if !envelopetest.IsCheck(err, tt.check) {
				t.Fatalf("err = %v, want check %q (%s)", err, tt.check, tt.reason)
			}
			envelopetest.AssertNoLeak(t, err.Error())
		})
	}
}

func TestParseMessageEnvelopeRefused(t *testing.T) {
	t.Parallel()
	// A well-formed email whose envelope points at another origin reaches the
	// origin check through the MIME path.
	raw := strings.ReplaceAll(string(readFixture(t, "plain-7bit.rfc822")), "https://consensus.md/invite/", "https://evil.example/invite/")
	_, err := ParseMessageBytes([]byte(raw), envelope.Policy{})
	if !envelopetest.IsCheck(err, envelope.CheckOrigin) {
		t.Fatalf("err = %v, want origin", err)
	}
	envelopetest.AssertNoLeak(t, err.Error())
}

func TestParseMessageUnknownCharset(t *testing.T) {
	t.Parallel()
	raw := strings.Replace(string(readFixture(t, "plain-7bit.rfc822")), "charset=utf-8", "charset=x-no-such-charset", 1)
	if _, err := ParseMessageBytes([]byte(raw), envelope.Policy{}); !envelopetest.IsCheck(err, envelope.CheckBlock) {
		t.Fatalf("err = %v, want block", err)
	}
	unrelated := strings.Replace(string(readFixture(t, "unrelated.rfc822")), "charset=utf-8", "charset=x-no-such-charset", 1)
	if _, err := ParseMessageBytes([]byte(unrelated), envelope.Policy{}); !errors.Is(err, ErrNoInvitation) {
		t.Fatalf("unrelated mail in an unknown charset: err = %v, want ErrNoInvitation", err)
	}
}

func TestParseMessageNoContentType(t *testing.T) {
	t.Parallel()
	raw := "From: a@example.com\r\nSubject: x\r\n\r\n" + strings.ReplaceAll(envelopetest.Body(string(envelopetest.Valid(t))), "\n", "\r\n")
	if _, err := ParseMessageBytes([]byte(raw), envelope.Policy{}); err != nil {
		t.Fatalf("a message without Content-Type is text/plain: %v", err)
	}
}
