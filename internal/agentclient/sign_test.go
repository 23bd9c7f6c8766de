package agentclient_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/agentclient"
	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/ingest"
	"github.com/consensus-md/consensus/internal/jwk"
)

// TestSignedAgent: with Sign the runtime binds a key of its own at claim
// (kept 0600 in its state directory, never in a record or a request), and
// every command it posts, replays included, verifies with that key.
func TestSignedAgent(t *testing.T) {
	t.Parallel()
	f := startVenue(t)
	f.createAgreement(t, "signer@agents.test")
	f.waitForMail(t, 1)
	inv, err := ingest.ParseMessageBytes(f.Sink.Messages()[0].Data, envelope.Policy{Origin: f.Origin, AllowHTTPLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a := newAgent(t, dir, agentclient.NewClient())
	a.Sign = true
	ctx := context.Background()
	rec, fresh, err := a.Accept(ctx, inv)
	if err != nil || !fresh || rec.PublicKey == nil {
		t.Fatalf("accept: %+v fresh %v, %v", rec, fresh, err)
	}
	keyFile := filepath.Join(dir, "keys", inv.InvitationID+".json")
	fi, err := os.Stat(keyFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v: %v", fi, err)
	}
	var stored struct{ X, D string }
	b, _ := os.ReadFile(keyFile)
	if err := json.Unmarshal(b, &stored); err != nil || stored.X != rec.PublicKey.X || stored.D == "" {
		t.Fatalf("stored key: %v", err)
	}
	recordFile, _ := os.ReadFile(filepath.Join(dir, inv.InvitationID+".json"))
	if strings.Contains(string(recordFile), stored.D) {
		t.Fatal("the invitation's record holds the private key")
	}
	if _, err := a.Post(ctx, rec.InvitationID, "comment", "Signed <and> sealed", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Post(ctx, rec.InvitationID, "agree", "", nil); err != nil {
		t.Fatal(err)
	}
	room, _, err := a.Room(ctx, rec.InvitationID)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Events []struct {
			Action, Body string
			Signature    *string
		}
	}
	if err := json.Unmarshal(room.Raw, &doc); err != nil || len(doc.Events) != 2 {
		t.Fatalf("events: %v %s", err, room.Raw)
	}
	pub, err := rec.PublicKey.Public()
	if err != nil {
		t.Fatal(err)
	}
	// The room shows no Idempotency-Key; the record (the room is reached)
	// holds each signed command's.
	keys := recordKeys(t, strings.TrimSuffix(rec.Actions.Room, "/room")+"/record", rec.ParticipantToken)
	for i, e := range doc.Events {
		msg, _ := canon.Marshal(map[string]any{
			"schema": f.Origin + "/schemas/room-command/v2", "version": 2, "agreement_id": rec.AgreementID, "invitation_id": rec.InvitationID,
			"participant_id": rec.ParticipantID, "revision": 1, "revision_digest": rec.RevisionDigest, "action": e.Action, "body": e.Body,
			"idempotency_key": keys[i],
		})
		if e.Signature == nil || !strings.HasPrefix(keys[i], "cak-") || jwk.Verify(ed25519.PublicKey(pub), msg, *e.Signature) != nil {
			t.Fatalf("%s: the signature does not verify with the bound key over room-command/v2 (key %q)", e.Action, keys[i])
		}
	}
	if strings.Contains(f.Logs.String(), stored.D) {
		t.Fatal("the server log holds the private key")
	}
}

// recordKeys reads the record at url and returns each event's
// command.idempotency_key, in order.
func recordKeys(t *testing.T, url, token string) []string {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Consensus-Participant "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Events []struct {
			Command struct {
				IdempotencyKey string `json:"idempotency_key"`
			} `json:"command"`
		} `json:"events"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 {
		t.Fatalf("record: %d %v", resp.StatusCode, err)
	}
	keys := make([]string, len(r.Events))
	for i, e := range r.Events {
		keys[i] = e.Command.IdempotencyKey
	}
	return keys
}
