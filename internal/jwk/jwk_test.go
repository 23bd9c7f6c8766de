package jwk

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// RFC 8037 appendix A: the key, its thumbprint and a signature.
const (
	rfcD     = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"
	rfcX     = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
	rfcThumb = "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
	rfcInput = "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc"
	rfcSig   = "hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"
)

func rfcKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	seed, err := base64.RawURLEncoding.DecodeString(rfcD)
	if err != nil {
		t.Fatal(err)
	}
	return ed25519.NewKeyFromSeed(seed)
}

func TestRFC8037Vectors(t *testing.T) {
	t.Parallel()
	priv := rfcKey(t)
	k := FromPublic(priv.Public().(ed25519.PublicKey))
	if k.X != rfcX || k.Kty != "OKP" || k.Crv != "Ed25519" {
		t.Fatalf("key %+v", k)
	}
	if got := k.Thumbprint(); got != rfcThumb {
		t.Fatalf("thumbprint %s, want %s", got, rfcThumb)
	}
	if got := Sign(priv, []byte(rfcInput)); got != rfcSig {
		t.Fatalf("signature %s, want %s", got, rfcSig)
	}
	pub, err := k.Public()
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(pub, []byte(rfcInput), rfcSig); err != nil {
		t.Fatal(err)
	}
	if err := Verify(pub, []byte(rfcInput+"x"), rfcSig); !errors.Is(err, ErrSignature) {
		t.Fatalf("a changed message verified: %v", err)
	}
	if p := Publish(pub); p.Kid != rfcThumb || p.Use != "sig" || p.Alg != "EdDSA" {
		t.Fatalf("published %+v", p)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	good := `{"kty":"OKP","crv":"Ed25519","x":"` + rfcX + `"}`
	if k, err := Parse([]byte(good)); err != nil || k.X != rfcX {
		t.Fatalf("%+v %v", k, err)
	}
	// the neutral point: with it as key, one signature verifies for every message
	neutral := base64.RawURLEncoding.EncodeToString(append([]byte{1}, make([]byte, 31)...))
	// y = p, a non-canonical spelling of y = 0
	nonCanonical := base64.RawURLEncoding.EncodeToString(append([]byte{0xed}, append([]byte(strings.Repeat("\xff", 30)), 0x7f)...))
	bad := map[string]string{
		"not JSON":           `{`,
		"array":              `[]`,
		"null":               `null`,
		"extra member d":     `{"kty":"OKP","crv":"Ed25519","x":"` + rfcX + `","d":"` + rfcD + `"}`,
		"extra member kid":   `{"kty":"OKP","crv":"Ed25519","x":"` + rfcX + `","kid":"a"}`,
		"duplicate x":        `{"kty":"OKP","crv":"Ed25519","x":"` + rfcX + `","x":"` + rfcX + `"}`,
		"missing x":          `{"kty":"OKP","crv":"Ed25519"}`,
		"x not a string":     `{"kty":"OKP","crv":"Ed25519","x":5}`,
		"other curve":        `{"kty":"OKP","crv":"X25519","x":"` + rfcX + `"}`,
		"EC key":             `{"kty":"EC","crv":"Ed25519","x":"` + rfcX + `"}`,
		"padded x":           `{"kty":"OKP","crv":"Ed25519","x":"` + rfcX + `="}`,
		"standard base64":    `{"kty":"OKP","crv":"Ed25519","x":"` + strings.NewReplacer("_", "/", "-", "+").Replace(rfcX) + `"}`,
		"short x":            `{"kty":"OKP","crv":"Ed25519","x":"` + rfcX[:40] + `"}`,
		"neutral point":      `{"kty":"OKP","crv":"Ed25519","x":"` + neutral + `"}`,
		"non-canonical y":    `{"kty":"OKP","crv":"Ed25519","x":"` + nonCanonical + `"}`,
		"stray trailing bit": `{"kty":"OKP","crv":"Ed25519","x":"` + rfcX[:42] + "p" + `"}`,
	}
	for name, raw := range bad {
		if _, err := Parse([]byte(raw)); !errors.Is(err, ErrKey) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestSmallOrderKeysRefused: every y of the torsion subgroup, with either
// sign bit, is refused; generated keys are not.
func TestSmallOrderKeysRefused(t *testing.T) {
	t.Parallel()
	for _, y := range smallOrderY {
		for _, sign := range []byte{0, 0x80} {
			le := make([]byte, 32)
			be := y.FillBytes(make([]byte, 32))
			for i := range be {
				le[31-i] = be[i]
			}
			le[31] |= sign
			if _, err := (Key{Kty: KtyOKP, Crv: CrvEd, X: EncodeSignature(le)}).Public(); !errors.Is(err, ErrKey) {
				t.Errorf("y=%x sign=%x accepted", y, sign)
			}
		}
	}
	for i := 0; i < 200; i++ {
		pub, _, _ := ed25519.GenerateKey(nil)
		if weakPublicKey(pub) {
			t.Fatalf("generated key %x refused", pub)
		}
	}
}

func TestNeutralKeyAcceptsAnyMessage(t *testing.T) {
	t.Parallel()
	// Why the check exists: the neutral point verifies the signature
	// (R = neutral, S = 0) for any message in crypto/ed25519.
	pub := ed25519.PublicKey(append([]byte{1}, make([]byte, 31)...))
	sig := append(append([]byte{1}, make([]byte, 31)...), make([]byte, 32)...)
	// Whether or not this Go still accepts it, our check must refuse it.
	if ed25519.Verify(pub, []byte("anything at all"), sig) {
		t.Log("crypto/ed25519 accepts the neutral key: the check below is what refuses it")
	}
	if _, err := (Key{Kty: KtyOKP, Crv: CrvEd, X: EncodeSignature(pub)}).Public(); !errors.Is(err, ErrKey) {
		t.Fatal("neutral key accepted")
	}
}

func TestSignatureSyntax(t *testing.T) {
	t.Parallel()
	priv := rfcKey(t)
	pub := priv.Public().(ed25519.PublicKey)
	for name, sig := range map[string]string{
		"empty":  "",
		"padded": rfcSig + "==",
		"std":    strings.NewReplacer("_", "/", "-", "+").Replace(rfcSig),
		"short":  rfcSig[:80],
		"long":   rfcSig + "AA",
	} {
		if err := Verify(pub, []byte(rfcInput), sig); !errors.Is(err, ErrSignature) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestParseSet(t *testing.T) {
	t.Parallel()
	pub := rfcKey(t).Public().(ed25519.PublicKey)
	raw := `{"keys":[{"kty":"RSA","n":"x","e":"AQAB","kid":"r"},{"kty":"OKP","crv":"Ed25519","x":"` + rfcX + `","kid":"` + rfcThumb + `","use":"sig","alg":"EdDSA"}]}`
	s, err := ParseSet([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Find(rfcThumb); !ok || !got.Equal(pub) {
		t.Fatal("key not found under its kid")
	}
	if _, ok := s.Find("other"); ok {
		t.Fatal("unknown kid found")
	}
	for name, raw := range map[string]string{
		"not JSON": `{`,
		"empty":    `{"keys":[]}`,
		"no kid":   `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + rfcX + `"}]}`,
		"bad x":    `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"abc","kid":"k"}]}`,
		// Two values of one member: which one counts is up to the parser,
		// so neither verifier (Go, tools/verify-record.mjs) accepts it.
		"duplicate kid":  `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + rfcX + `","kid":"a","kid":"` + rfcThumb + `"}]}`,
		"duplicate keys": `{"keys":[],"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + rfcX + `","kid":"` + rfcThumb + `"}]}`,
	} {
		if _, err := ParseSet([]byte(raw)); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}
