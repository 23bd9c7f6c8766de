package secret

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func TestShapes(t *testing.T) {
	t.Parallel()
	if s := NewInviteSecret(); !regexp.MustCompile(`^csi_[A-Za-z0-9_-]{43}$`).MatchString(s) {
		t.Fatal(s)
	}
	if p := NewEmailProof(); !regexp.MustCompile(`^[A-Za-z0-9_-]{32}$`).MatchString(p) {
		t.Fatal(p)
	}
	if s := NewSessionToken(); !strings.HasPrefix(s, "css_") || NewSessionToken() == s {
		t.Fatal(s)
	}
	if NormalizeInviteSecret("abc") != "csi_abc" || NormalizeInviteSecret("csi_abc") != "csi_abc" {
		t.Fatal("normalize")
	}
}

func TestHashEqual(t *testing.T) {
	t.Parallel()
	if !Equal(Hash("a"), Hash("a")) || Equal(Hash("a"), Hash("b")) || Equal(Hash("a"), nil) {
		t.Fatal("Equal")
	}
}

func TestParticipantTokenDeterministicAndKeyed(t *testing.T) {
	t.Parallel()
	k1, _ := DeriveKeys(bytes.Repeat([]byte{1}, 32))
	k2, _ := DeriveKeys(bytes.Repeat([]byte{2}, 32))
	a := k1.ParticipantToken("d1")
	if a != k1.ParticipantToken("d1") || a == k1.ParticipantToken("d2") || a == k2.ParticipantToken("d1") || !strings.HasPrefix(a, "csp_") {
		t.Fatal("participant token derivation")
	}
	if _, err := DeriveKeys([]byte("short")); err == nil {
		t.Fatal("short key accepted")
	}
}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	k, _ := DeriveKeys(bytes.Repeat([]byte{7}, 32))
	sealed := k.Seal([]byte("secret body"), []byte("row-1"))
	if bytes.Contains(sealed, []byte("secret body")) {
		t.Fatal("plaintext visible")
	}
	got, err := k.Open(sealed, []byte("row-1"))
	if err != nil || string(got) != "secret body" {
		t.Fatal(got, err)
	}
	if _, err := k.Open(sealed, []byte("row-2")); err == nil {
		t.Fatal("opened with the wrong aad")
	}
	other, _ := DeriveKeys(bytes.Repeat([]byte{8}, 32))
	if _, err := other.Open(sealed, []byte("row-1")); err == nil {
		t.Fatal("opened with another key")
	}
}
