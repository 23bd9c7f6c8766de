package e2e

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/contract"
	"github.com/consensus-md/consensus/internal/servertest"
)

// b64 is the unpadded base64url of keys and signatures.
var b64 = base64.RawURLEncoding

// newKey derives an Ed25519 key from a label: a TEST KEY, public by
// construction.
func newKey(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("consensus-md e2e TEST KEY: " + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

// jwkOf is the public JWK a claim sends.
func jwkOf(priv ed25519.PrivateKey) map[string]any {
	return map[string]any{"kty": "OKP", "crv": "Ed25519", "x": b64.EncodeToString(priv.Public().(ed25519.PublicKey))}
}

// jcs is the RFC 8785 form of v.
func jcs(t testing.TB, v any) []byte {
	t.Helper()
	b, err := canon.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// keyed is an agent that binds a key: it builds the participant-binding/v2
// and every room-command/v1 itself, from the exchange answer alone, as an
// agent following llms-full.txt would.
type keyed struct {
	*agent
	priv     ed25519.PrivateKey
	exchange map[string]any
	origin   string
	// revision is the revision its commands name (0: revision 1, with the
	// digest of the exchange); see onRevision.
	revision int
}

// onRevision makes the agent's later commands name revision n, whose
// digest is digest, as an agent does after re-verifying a new revision.
func (k *keyed) onRevision(n int, digest string) {
	k.revision, k.digest = n, digest
}

// rev is the revision number its commands name.
func (k *keyed) rev() int { return max(k.revision, 1) }

// bindingV2 is the object the keyed claim makes, built client-side.
func (k *keyed) bindingV2(priv ed25519.PrivateKey) map[string]any {
	x := k.exchange
	return map[string]any{
		"schema": k.origin + "/schemas/participant-binding/v2", "version": 2,
		"agreement_id": x["agreementId"], "invitation_id": x["invitationId"],
		"participant_id": x["participant"].(map[string]any)["participantId"], "inbox": strings.ToLower(strings.TrimSpace(k.inv.Inbox)),
		"runtime_endpoint": nil, "assurance": "recipient-email-proof-possession+key-possession",
		"revision": x["revisionNumber"], "revision_digest": x["revisionDigest"], "public_key": jwkOf(priv),
	}
}

// joinKeyed exchanges and makes a keyed claim with priv; it returns the
// claim answer.
func (s *server) joinKeyed(invitationID string, priv ed25519.PrivateKey) (*keyed, map[string]any) {
	s.t.Helper()
	k := &keyed{agent: s.agent(invitationID), priv: priv, origin: s.Origin}
	r := k.agent.exchange()
	expect(s.t, r, 200, "")
	k.exchange = r.json(s.t)
	k.session, k.digest = k.exchange["sessionToken"].(string), k.exchange["revisionDigest"].(string)
	r = k.claim(k.keyedClaim(priv, priv))
	expect(s.t, r, 200, "")
	m := r.json(s.t)
	k.token, k.pid = m["participantToken"].(string), m["participantId"].(string)
	return k, m
}

// keyedClaim is a claim body binding key's public half, proved with signer.
func (k *keyed) keyedClaim(key, signer ed25519.PrivateKey) map[string]any {
	proof := ed25519.Sign(signer, jcs(k.s.t, k.bindingV2(key)))
	return map[string]any{"emailProof": k.inv.EmailProof, "inbox": k.inv.Inbox, "publicKey": jwkOf(key), "keyProof": b64.EncodeToString(proof)}
}

// commandV1 is the room-command/v1 the service builds for this agent.
func (k *keyed) commandV1(action, body string) map[string]any {
	return map[string]any{
		"schema": k.origin + "/schemas/room-command/v1", "version": 1, "agreement_id": k.exchange["agreementId"],
		"invitation_id": k.inv.InvitationID, "participant_id": k.pid, "revision": k.rev(), "revision_digest": k.digest,
		"action": action, "body": body,
	}
}

// command is the room-command/v2 this agent signs for a command posted
// under the Idempotency-Key key: v1 with schema v2, version 2 and
// idempotency_key.
func (k *keyed) command(key, action, body string) map[string]any {
	c := k.commandV1(action, body)
	c["schema"], c["version"], c["idempotency_key"] = k.origin+"/schemas/room-command/v2", 2, key
	return c
}

// sign is the Consensus-Signature of a command posted under key, by signer.
func (k *keyed) sign(signer ed25519.PrivateKey, key, action, body string) string {
	return b64.EncodeToString(ed25519.Sign(signer, jcs(k.s.t, k.command(key, action, body))))
}

// signV1 is the Consensus-Signature of the room-command/v1 of a command,
// by signer: what keyed agents signed before commands bound their
// Idempotency-Key.
func (k *keyed) signV1(signer ed25519.PrivateKey, action, body string) string {
	return b64.EncodeToString(ed25519.Sign(signer, jcs(k.s.t, k.commandV1(action, body))))
}

// postSigned posts with the given Consensus-Signature ("" sends none).
func (k *keyed) postSigned(key, action, body, signature string) *response {
	h := k.auth()
	h["Idempotency-Key"] = key
	if signature != "" {
		h["Consensus-Signature"] = signature
	}
	return k.s.do("POST", k.s.agentPath(k.inv.InvitationID, "events"), h, map[string]any{"action": action, "body": body, "revision": k.rev(), "digest": k.digest})
}

// say posts a correctly signed command and fails the test unless it is stored.
func (k *keyed) say(key, action, body string) map[string]any {
	k.s.t.Helper()
	r := k.postSigned(key, action, body, k.sign(k.priv, key, action, body))
	expect(k.s.t, r, 201, "")
	return r.json(k.s.t)
}

// record reads …/record.
func (a *agent) record(headers map[string]string) *response {
	h := a.auth()
	for k, v := range headers {
		h[k] = v
	}
	return a.s.do("GET", a.s.agentPath(a.inv.InvitationID, "record"), h, nil)
}

// signRaw signs bytes with priv.

// postTwiceSigned posts a command with the Consensus-Signature header
// repeated (the same value twice), which must be refused, not resolved.
func (s *server) postTwiceSigned(k *keyed, action, signature string) *response {
	s.t.Helper()
	body := fmt.Sprintf(`{"action":%q,"body":"","revision":1,"digest":%q}`, action, k.digest)
	req, err := http.NewRequest("POST", s.URL+s.agentPath(k.inv.InvitationID, "events"), strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Consensus-Participant "+k.token)
	req.Header.Set("Idempotency-Key", "twice-0001")
	req.Header.Set(contract.SkipRequestHeader, "1")
	req.Header.Add("Consensus-Signature", signature)
	req.Header.Add("Consensus-Signature", signature)
	resp, err := s.Client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return &response{Response: resp, body: b}
}

// signingSeed is the TEST service key of the record tests (hex seed).
var signingSeed = strings.Repeat("5e", 32)

func servertestOptions(seed string) servertest.Options { return servertest.Options{SigningKey: seed} }

func withSigningKey(o servertest.Options, seed string) servertest.Options {
	o.SigningKey = seed
	return o
}

// flip changes one byte in the middle of b.
func flip(b []byte) []byte {
	c := bytes.Clone(b)
	c[len(c)/2] ^= 1
	return c
}

// decodeRecord reads a record as generic JSON, numbers kept exact.
func decodeRecord(t testing.TB, rec []byte) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(rec))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// dropLastEvent removes the record's last event and nothing else.
func dropLastEvent(t testing.TB, rec []byte) []byte {
	t.Helper()
	m := decodeRecord(t, rec)
	ev := m["events"].([]any)
	m["events"] = ev[:len(ev)-1]
	return jcs(t, m)
}

// forge signs the record again with a key that is not the service's, under
// the service key's kid.
func forge(t testing.TB, rec []byte) []byte {
	t.Helper()
	m := decodeRecord(t, rec)
	sig := m["signature"].(map[string]any)
	delete(m, "signature")
	sig["value"] = b64.EncodeToString(ed25519.Sign(newKey("forger"), jcs(t, m)))
	m["signature"] = sig
	return jcs(t, m)
}
