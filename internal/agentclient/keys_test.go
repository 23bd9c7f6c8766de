package agentclient

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
)

const keyTestInvitation = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"

// TestParticipantKeyStored: the key is created once, 0600 in a 0700
// directory, and every later call (also concurrent ones) gets the same key.
func TestParticipantKeyStored(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := OpenState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.storedKey(keyTestInvitation); err == nil {
		t.Fatal("a missing key loaded")
	}
	var wg sync.WaitGroup
	keys := make([]ed25519.PrivateKey, 8)
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys[i], _ = st.ParticipantKey(keyTestInvitation)
		}()
	}
	wg.Wait()
	for i, k := range keys {
		if k == nil || !k.Equal(keys[0]) {
			t.Fatalf("call %d got another key", i)
		}
	}
	again, err := st.storedKey(keyTestInvitation)
	if err != nil || !again.Equal(keys[0]) {
		t.Fatalf("stored key: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, "keys", keyTestInvitation+".json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	if di, err := os.Stat(filepath.Join(dir, "keys")); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("keys directory: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "keys", ".*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	recs, err := st.List()
	if err != nil || len(recs) != 0 {
		t.Fatalf("a key shows as a claimed invitation: %v %v", recs, err)
	}
}

// TestPrivateKeyNeverPrinted: formatting the stored form shows no d.
func TestPrivateKeyNeverPrinted(t *testing.T) {
	t.Parallel()
	k := privateKey{Kty: "OKP", Crv: "Ed25519", X: "public-x", D: "SECRET-D"}
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s", k, k, k, k)} {
		if strings.Contains(s, "SECRET-D") {
			t.Fatalf("printed the private key: %s", s)
		}
	}
}

// TestSignaturesMatchWhatTheServerBuilds: the binding and command the
// runtime signs are the participant-binding/v2 and room-command/v1 objects
// of the contract, built independently here from room.
func TestSignaturesMatchWhatTheServerBuilds(t *testing.T) {
	t.Parallel()
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	pubKey := priv.Public().(ed25519.PublicKey)
	digest := strings.Repeat("ab", 32)
	x := &Exchanged{AgreementID: "3f0c2b9e-8d4a-4e61-9b7c-5a2d1e0f3c4b", InvitationID: keyTestInvitation, RevisionNumber: 1, RevisionDigest: "sha256:" + digest}
	x.Participant.ParticipantID = "1b2c3d4e-5f60-4718-9a0b-c1d2e3f40516"
	pub, proof, got, err := keyedBinding("https://consensus.example", x, "  Ada@AgentMail.to ", "", priv)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"schema": "https://consensus.example/schemas/participant-binding/v2", "version": 2, "agreement_id": x.AgreementID,
		"invitation_id": keyTestInvitation, "participant_id": x.Participant.ParticipantID, "inbox": "ada@agentmail.to",
		"runtime_endpoint": nil, "assurance": "recipient-email-proof-possession+key-possession", "revision": 1,
		"revision_digest": digest, "public_key": map[string]any{"kty": "OKP", "crv": "Ed25519", "x": jwk.FromPublic(pubKey).X},
	}
	msg, wantDigest, _ := canon.DigestOf(want)
	if got != wantDigest || pub != jwk.FromPublic(pubKey) || jwk.Verify(pubKey, msg, proof) != nil {
		t.Fatalf("binding digest %s, want %s (%s)", got, wantDigest, msg)
	}
	rec := &Record{Origin: "https://consensus.example", AgreementID: x.AgreementID, InvitationID: keyTestInvitation, ParticipantID: x.Participant.ParticipantID}
	sig, err := commandSignature(rec, "cak-0001", Command{Action: "comment", Body: "<ok> & fine", Revision: 1, Digest: digest}, priv)
	if err != nil {
		t.Fatal(err)
	}
	// room-command/v2: the v1 fields, and the Idempotency-Key it is posted under.
	cmd, _ := canon.Marshal(map[string]any{"schema": "https://consensus.example/schemas/room-command/v2", "version": 2, "agreement_id": x.AgreementID,
		"invitation_id": keyTestInvitation, "participant_id": x.Participant.ParticipantID, "revision": 1, "revision_digest": digest,
		"action": "comment", "body": "<ok> & fine", "idempotency_key": "cak-0001"})
	if jwk.Verify(pubKey, cmd, sig) != nil {
		t.Fatalf("signature does not verify over %s", cmd)
	}
	if b, _ := json.Marshal(rec); strings.Contains(string(b), `"d"`) {
		t.Fatal("a record holds a private key")
	}
}
