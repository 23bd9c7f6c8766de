package consensus_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/room"
)

// TestLLMsFullSigningExample recomputes every value of the signed-decision
// worked example in llms-full.txt from its test seed, so the published
// bytes stay true: the public key, the canonical participant-binding/v2,
// its digest and keyProof, the canonical room command, its digest and its
// Consensus-Signature.
func TestLLMsFullSigningExample(t *testing.T) {
	t.Parallel()
	raw, err := consensus.Web.ReadFile("web/llms-full.txt")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```text\n(TEST KEY seed.*?)\n```").FindStringSubmatch(string(raw))
	if block == nil {
		t.Fatal("llms-full.txt has no signing example in the expected shape")
	}
	v := map[string]string{}
	for _, line := range strings.Split(block[1], "\n") {
		name, value, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("line %q is not name: value", line)
		}
		v[name] = value
	}
	seed, err := hex.DecodeString(v["TEST KEY seed (hex)"])
	if err != nil || len(seed) != ed25519.SeedSize {
		t.Fatalf("seed: %v", err)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	key := jwk.FromPublic(priv.Public().(ed25519.PublicKey))
	if kb, _ := canon.Marshal(key); string(kb) != v["publicKey"] {
		t.Fatalf("publicKey is %s, the seed gives %s", v["publicKey"], kb)
	}
	binding, command := []byte(v["binding (canonical bytes)"]), []byte(v["command (canonical bytes)"])
	for name, b := range map[string][]byte{"binding": binding, "command": command} {
		if c, err := canon.Transform(b); err != nil || string(c) != string(b) {
			t.Fatalf("the %s bytes are not canonical: %v", name, err)
		}
	}
	var kb room.KeyedBinding
	if err := json.Unmarshal(binding, &kb); err != nil || kb.PublicKey != key || kb.Version != 2 || kb.Assurance != room.AssuranceKey ||
		kb.Schema != "https://consensus.md/schemas/participant-binding/v2" {
		t.Fatalf("binding %+v: %v", kb, err)
	}
	var cmd room.Command
	if err := json.Unmarshal(command, &cmd); err != nil || cmd.AgreementID != kb.AgreementID || cmd.InvitationID != kb.InvitationID ||
		cmd.ParticipantID != kb.ParticipantID || cmd.RevisionDigest != kb.RevisionDigest || cmd.Schema != "https://consensus.md/schemas/room-command/v2" ||
		cmd.Version != 2 || cmd.IdempotencyKey == "" {
		t.Fatalf("command %+v does not belong to the binding: %v", cmd, err)
	}
	// The published bytes are exactly what the service's own types encode:
	// no member misspelled, missing or extra (decoding alone ignores those).
	for name, pair := range map[string][2]any{"binding": {kb, binding}, "command": {cmd, command}} {
		if b, err := canon.Marshal(pair[0]); err != nil || string(b) != string(pair[1].([]byte)) {
			t.Fatalf("the %s in llms-full.txt is not what the service encodes:\n doc %s\n Go  %s (%v)", name, pair[1], b, err)
		}
	}
	checks := map[string]string{
		"bindingDigest":       canon.Digest(binding),
		"keyProof":            jwk.Sign(priv, binding),
		"command digest":      canon.Digest(command),
		"Consensus-Signature": jwk.Sign(priv, command),
	}
	for name, want := range checks {
		if v[name] != want {
			t.Errorf("%s is %s, recomputed %s", name, v[name], want)
		}
	}
}
