package venue

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/room"
)

// TestGuideSignedCommandExample: the worked example of llms-full.txt is
// what the service checks: its command bytes are the room-command/v2 the
// service builds for that command and Idempotency-Key, its digest is theirs,
// and its Consensus-Signature verifies over them with the RFC 8032 test key.
func TestGuideSignedCommandExample(t *testing.T) {
	t.Parallel()
	f, err := os.Open("../../web/llms-full.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc := map[string]string{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		for _, k := range []string{"TEST KEY seed (hex)", "Idempotency-Key", "command (canonical bytes)", "command digest", "Consensus-Signature"} {
			if v, ok := strings.CutPrefix(sc.Text(), k+": "); ok {
				doc[k] = v
			}
		}
	}
	cmd := room.Command{AgreementID: "3f0c2b9e-8d4a-4e61-9b7c-5a2d1e0f3c4b", InvitationID: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
		ParticipantID: "1b2c3d4e-5f60-4718-9a0b-c1d2e3f40516", Revision: 1,
		RevisionDigest: "25fdf8253a5bac8250a62e38eb3a6bba01f572bb9cf8208d926c2b5e3a1793d7", Action: room.ActionAgree}
	signed := cmd.Signed("https://consensus.md", doc["Idempotency-Key"])
	if got := string(commandBytes(signed)); got != doc["command (canonical bytes)"] {
		t.Fatalf("the guide's command bytes\n%s\nare not the service's\n%s", doc["command (canonical bytes)"], got)
	}
	if got := canon.Digest(commandBytes(signed)); got != doc["command digest"] {
		t.Fatalf("command digest %s, the guide states %s", got, doc["command digest"])
	}
	seed, err := hex.DecodeString(doc["TEST KEY seed (hex)"])
	if err != nil || len(seed) != ed25519.SeedSize {
		t.Fatalf("seed: %v", err)
	}
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	sig := doc["Consensus-Signature"]
	stored, raw, v1, err := checkSignature(pub, cmd.Unsigned("https://consensus.md"), "https://consensus.md", doc["Idempotency-Key"], &sig)
	if err != nil || v1 || !bytes.Equal(commandBytes(stored), commandBytes(signed)) || jwk.EncodeSignature(raw) != sig {
		t.Fatalf("the guide's signature: v1 %v, %v", v1, err)
	}
}
