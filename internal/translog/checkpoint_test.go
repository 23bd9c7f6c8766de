package translog

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
func hexOf(b []byte) string     { return hex.EncodeToString(b) }

// testKey is a throwaway Ed25519 key from a public label.
func testKey(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("consensus-md TEST KEY, never use for anything real: " + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

// cosign writes the signature line a C2SP tlog-cosignature/v1 witness
// named name would add to the checkpoint text at time t, built here from
// the specification, not with the package's verifier.
func cosign(name string, priv ed25519.PrivateKey, t uint64, text string) string {
	pub := priv.Public().(ed25519.PublicKey)
	kh := sha256.Sum256(append([]byte(name+"\n\x04"), pub...))
	sig := ed25519.Sign(priv, []byte(fmt.Sprintf("cosignature/v1\ntime %d\n%s", t, text)))
	b := append(append([]byte{}, kh[:4]...), binary.BigEndian.AppendUint64(nil, t)...)
	return "— " + name + " " + base64.StdEncoding.EncodeToString(append(b, sig...)) + "\n"
}

func TestCheckpointText(t *testing.T) {
	t.Parallel()
	root := tlog.RecordHash([]byte("x"))
	c := Checkpoint{Origin: "example.com/log", Size: 42, Root: root}
	want := "example.com/log\n42\n" + base64.StdEncoding.EncodeToString(root[:]) + "\n"
	if c.Text() != want {
		t.Fatalf("Text() = %q, want %q", c.Text(), want)
	}
	for _, text := range []string{want, want + "extension line\n", want + "a\nb\n"} {
		got, err := ParseCheckpoint(text)
		if err != nil || got != c {
			t.Errorf("ParseCheckpoint(%q) = %+v, %v", text, got, err)
		}
	}
	r := base64.StdEncoding.EncodeToString(root[:])
	for _, bad := range []string{
		"", "example.com/log\n42\n", "example.com/log\n42\n" + r, "\n42\n" + r + "\n",
		"example.com/log\n042\n" + r + "\n", "example.com/log\n+42\n" + r + "\n", "example.com/log\n-1\n" + r + "\n",
		"example.com/log\n 42\n" + r + "\n", "example.com/log\nx\n" + r + "\n",
		"example.com/log\n42\n" + r[:40] + "\n", "example.com/log\n42\n" + strings.TrimRight(r, "=") + "\n",
		"example.com/log\n42\n" + base64.StdEncoding.EncodeToString(make([]byte, 33)) + "\n",
	} {
		if _, err := ParseCheckpoint(bad); !errors.Is(err, ErrCheckpoint) {
			t.Errorf("ParseCheckpoint(%q) = %v, want ErrCheckpoint", bad, err)
		}
	}
}

func TestSignerRoundTrip(t *testing.T) {
	t.Parallel()
	s, err := NewSigner("example.com/log", testKey("log"))
	if err != nil {
		t.Fatal(err)
	}
	c := Checkpoint{Origin: "example.com/log", Size: 3, Root: tlog.RecordHash([]byte("r"))}
	signed, err := s.SignCheckpoint(c)
	if err != nil {
		t.Fatal(err)
	}
	// x/mod's own verifier reads the published key and the signed note.
	v, err := note.NewVerifier(s.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(signed, note.VerifierList(v))
	if err != nil || n.Text != c.Text() {
		t.Fatalf("note.Open: %v, text %q", err, n.Text)
	}
	ours, err := NewVerifier(s.VerifierKey())
	if err != nil || ours.KeyHash() != s.KeyHash() || ours.Name() != s.Name() {
		t.Fatalf("NewVerifier(%q) = %v, %v", s.VerifierKey(), ours, err)
	}
	if _, err := s.SignCheckpoint(Checkpoint{Origin: "other/log", Size: 3}); err == nil {
		t.Fatal("signed a checkpoint of another origin")
	}
	for _, name := range []string{"", "a b", "a+b", "a\nb", "a\tb", "\xff"} {
		if _, err := NewSigner(name, testKey("log")); err == nil {
			t.Errorf("NewSigner(%q) accepted a name a note key cannot have", name)
		}
	}
}

func TestCosignatureVerifier(t *testing.T) {
	t.Parallel()
	priv := testKey("witness")
	pub := priv.Public().(ed25519.PublicKey)
	text := Checkpoint{Origin: "example.com/log", Size: 9, Root: tlog.RecordHash([]byte("r"))}.Text()
	line := cosign("witness.example", priv, 1700000000, text)
	_, b64, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(line, "— "), "\n"), " ")
	sig, _ := base64.StdEncoding.DecodeString(b64)

	vkey := CosignatureVerifierKey("witness.example", pub)
	kh := sha256.Sum256(append([]byte("witness.example\n\x04"), pub...))
	if want := fmt.Sprintf("witness.example+%x+%s", kh[:4], base64.StdEncoding.EncodeToString(append([]byte{4}, pub...))); vkey != want {
		t.Fatalf("CosignatureVerifierKey = %q, want %q", vkey, want)
	}
	byVkey, err := NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	byName, err := WitnessKey("witness.example=" + base64.StdEncoding.EncodeToString(pub))
	if err != nil {
		t.Fatal(err)
	}
	byWitnessVkey, err := WitnessKey(vkey)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []note.Verifier{byVkey, byName, byWitnessVkey} {
		if v.Name() != "witness.example" || v.KeyHash() != binary.BigEndian.Uint32(sig[:4]) {
			t.Errorf("verifier %d: name %q hash %08x, the line's %08x", i, v.Name(), v.KeyHash(), sig[:4])
		}
		if !v.Verify([]byte(text), sig[4:]) {
			t.Errorf("verifier %d refused a good cosignature", i)
		}
		bad := append([]byte(nil), sig[4:]...)
		bad[3]++ // another time: the signature covers it
		if v.Verify([]byte(text), bad) || v.Verify([]byte(text+"x\n"), sig[4:]) || v.Verify([]byte(text), sig[4:70]) {
			t.Errorf("verifier %d accepted a changed time, text or a short signature", i)
		}
	}
	if tm, err := CosignatureTime(sig); err != nil || tm != 1700000000 {
		t.Fatalf("CosignatureTime = %d, %v", tm, err)
	}
	// note.Open finds the cosignature by name and key hash.
	s, _ := NewSigner("example.com/log", testKey("log"))
	signed, _ := s.SignCheckpoint(Checkpoint{Origin: "example.com/log", Size: 9, Root: tlog.RecordHash([]byte("r"))})
	n, err := note.Open(AddSignatureLines(signed, line, line), note.VerifierList(byVkey))
	if err != nil || len(n.Sigs) != 1 || n.Sigs[0].Name != "witness.example" {
		t.Fatalf("note.Open with the cosignature: %v %+v", err, n)
	}
	if got := AddSignatureLines(signed, line, strings.TrimSuffix(line, "\n")); strings.Count(string(got), line) != 1 {
		t.Fatalf("AddSignatureLines repeated a line:\n%s", got)
	}
}

func TestVerifierKeysRefused(t *testing.T) {
	t.Parallel()
	pub := testKey("witness").Public().(ed25519.PublicKey)
	good := CosignatureVerifierKey("w", pub)
	b64 := base64.StdEncoding.EncodeToString(pub)
	for _, k := range []string{
		"", "w", "w+1234", "w+zzzzzzzz+" + b64,
		strings.Replace(good, "+", "+0", 1),                                               // hash of nine digits
		"w+00000000+" + base64.StdEncoding.EncodeToString(append([]byte{4}, pub...)),      // wrong hash
		"w+00000000+" + base64.StdEncoding.EncodeToString(append([]byte{1}, pub...)),      // wrong hash, Ed25519
		"w+00000000+" + base64.StdEncoding.EncodeToString(append([]byte{2}, pub...)),      // unknown algorithm
		"w+00000000+" + base64.StdEncoding.EncodeToString(append([]byte{4}, pub[:31]...)), // short key
		"a b+00000000+" + base64.StdEncoding.EncodeToString(append([]byte{4}, pub...)),    // bad name
	} {
		if _, err := NewVerifier(k); err == nil {
			t.Errorf("NewVerifier(%q) accepted", k)
		}
	}
	for _, k := range []string{"w=", "w=" + b64[:20], "=" + b64, "a b=" + b64, "w=" + b64 + "x"} {
		if _, err := WitnessKey(k); err == nil {
			t.Errorf("WitnessKey(%q) accepted", k)
		}
	}
}
