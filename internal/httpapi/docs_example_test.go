package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/canon"
)

// TestServedSigningExampleHolds: the worked example of "Signed decisions"
// in llms-full.txt, as a deployment serves it (its origin is not the one
// the file is written with), is true of its own bytes. The printed
// canonical bytes hash to the printed digests, the key proof and the
// signature verify over them with the key the seed makes, and the schema
// URLs inside are this deployment's, the ones its service builds. An agent
// that checks its canonicalizer against the example must never be told a
// correct one is wrong.
func TestServedSigningExampleHolds(t *testing.T) {
	t.Parallel()
	s := newProblemServer(t, pingFunc(func(context.Context) error { return nil }))
	resp, body := s.do(t, http.MethodGet, "/llms-full.txt", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /llms-full.txt: %d", resp.StatusCode)
	}
	checkSigningExample(t, body, s.origin)
}

// checkSigningExample checks the worked example of doc, written for origin,
// computing every value from the printed bytes alone.
func checkSigningExample(t *testing.T, doc []byte, origin string) {
	t.Helper()
	names := []string{"TEST KEY seed (hex)", "publicKey", "binding (canonical bytes)", "bindingDigest", "keyProof",
		"Idempotency-Key", "command (canonical bytes)", "command digest", "Consensus-Signature"}
	ex := map[string]string{}
	for sc := bufio.NewScanner(bytes.NewReader(doc)); sc.Scan(); {
		for _, k := range names {
			if v, ok := strings.CutPrefix(sc.Text(), k+": "); ok {
				if _, twice := ex[k]; twice {
					t.Fatalf("the example states %q twice", k)
				}
				ex[k] = v
			}
		}
	}
	for _, k := range names {
		if ex[k] == "" {
			t.Fatalf("the example does not state %q", k)
		}
	}
	seed, err := hex.DecodeString(ex["TEST KEY seed (hex)"])
	if err != nil || len(seed) != ed25519.SeedSize {
		t.Fatalf("seed: %v", err)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	var jwkKey struct{ Kty, Crv, X string }
	if err := json.Unmarshal([]byte(ex["publicKey"]), &jwkKey); err != nil || jwkKey.X != base64.RawURLEncoding.EncodeToString(pub) {
		t.Errorf("publicKey %s is not the seed's public key (%v)", ex["publicKey"], err)
	}
	sum := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return hex.EncodeToString(h[:])
	}
	verify := func(what, msg, sig string) {
		raw, err := base64.RawURLEncoding.Strict().DecodeString(sig)
		if err != nil || !ed25519.Verify(pub, []byte(msg), raw) {
			t.Errorf("%s %s does not verify over the printed bytes with the seed's key", what, sig)
		}
	}
	canonical := func(what, b string) map[string]any {
		var v map[string]any
		if err := json.Unmarshal([]byte(b), &v); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		again, err := canon.Transform([]byte(b))
		if err != nil || string(again) != b {
			t.Errorf("%s are not canonical JSON: %s", what, again)
		}
		return v
	}

	binding := ex["binding (canonical bytes)"]
	if got := sum(binding); got != ex["bindingDigest"] {
		t.Errorf("the binding's canonical bytes hash to %s; the example prints bindingDigest %s", got, ex["bindingDigest"])
	}
	verify("keyProof", binding, ex["keyProof"])
	if b := canonical("binding bytes", binding); b["schema"] != origin+"/schemas/participant-binding/v2" {
		t.Errorf("the binding's schema is %v, this deployment's is %s", b["schema"], origin+"/schemas/participant-binding/v2")
	}

	command := ex["command (canonical bytes)"]
	if got := sum(command); got != ex["command digest"] {
		t.Errorf("the command's canonical bytes hash to %s; the example prints command digest %s", got, ex["command digest"])
	}
	verify("Consensus-Signature", command, ex["Consensus-Signature"])
	c := canonical("command bytes", command)
	if c["schema"] != origin+"/schemas/room-command/v2" {
		t.Errorf("the command's schema is %v, this deployment's is %s", c["schema"], origin+"/schemas/room-command/v2")
	}
	if c["idempotency_key"] != ex["Idempotency-Key"] {
		t.Errorf("the command's idempotency_key %v is not the example's Idempotency-Key %s", c["idempotency_key"], ex["Idempotency-Key"])
	}
}

// TestNotOfferedSaysWhatTheCapabilitiesSay: the "Not offered" paragraph
// is the capabilities document's notOffered in words: a deployment that
// reads no reply mailbox says taking part by email is not offered, one
// that reads replies does not, and says it does.
func TestNotOfferedSaysWhatTheCapabilitiesSay(t *testing.T) {
	t.Parallel()
	s := newProblemServer(t, pingFunc(func(context.Context) error { return nil }))
	caps := s.capabilities()
	if !slices.Contains(caps.NotOffered, "email-reply-participation") {
		t.Fatal("a deployment without a reply mailbox offers replies: the test below proves nothing")
	}
	without := notOfferedLine(s.origin, caps)
	caps.NotOffered = slices.DeleteFunc(caps.NotOffered, func(n string) bool { return n == "email-reply-participation" })
	with := notOfferedLine(s.origin, caps)
	if !strings.Contains(without, "replying to the invitation email") || strings.Contains(without, "This deployment reads replies") {
		t.Errorf("without a reply mailbox: %s", without)
	}
	if strings.Contains(with, "replying to the invitation email (") || !strings.Contains(with, "This deployment reads replies") {
		t.Errorf("with a reply mailbox: %s", with)
	}
	served := string(s.discoveryDocuments().llmsFull.body)
	if !strings.Contains(served, without) {
		t.Errorf("the served llms-full.txt does not say what its capabilities document says:\n%s", without)
	}
}
