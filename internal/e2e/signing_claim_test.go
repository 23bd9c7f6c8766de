package e2e

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"maps"
	"testing"
)

// TestKeyedClaim: a claim binds an Ed25519 key only with a proof by that
// key over the participant-binding/v2 it makes; the answer is that binding,
// whose digest the agent computed itself; replays and conflicts follow the
// v1 rules.
func TestKeyedClaim(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Keyed claim", s.future())
	ada := newKey("ada")
	k := &keyed{agent: s.agent(c.Participants[0].InvitationID), priv: ada, origin: s.Origin}
	r := k.agent.exchange()
	expect(t, r, 200, "")
	k.exchange = r.json(t)
	k.session, k.digest = k.exchange["sessionToken"].(string), k.exchange["revisionDigest"].(string)

	other := newKey("mallory")
	smallOrder := map[string]any{"kty": "OKP", "crv": "Ed25519", "x": b64.EncodeToString(append([]byte{1}, make([]byte, 31)...))}
	withProof := func(key map[string]any, proof string) map[string]any {
		return map[string]any{"emailProof": k.inv.EmailProof, "inbox": k.inv.Inbox, "publicKey": key, "keyProof": proof}
	}
	good := k.keyedClaim(ada, ada)
	v1Proof := b64.EncodeToString(ed25519.Sign(ada, jcs(t, map[string]any{"not": "the binding"})))
	refused := map[string]struct {
		body  map[string]any
		field string
	}{
		"proof by another key":     {k.keyedClaim(ada, other), "keyProof"},
		"proof over other bytes":   {withProof(jwkOf(ada), v1Proof), "keyProof"},
		"key of the other proof":   {k.keyedClaim(other, ada), "keyProof"},
		"proof missing":            {map[string]any{"emailProof": k.inv.EmailProof, "inbox": k.inv.Inbox, "publicKey": jwkOf(ada)}, "keyProof"},
		"proof without key":        {map[string]any{"emailProof": k.inv.EmailProof, "inbox": k.inv.Inbox, "keyProof": good["keyProof"]}, "publicKey"},
		"private half sent":        {withProof(map[string]any{"kty": "OKP", "crv": "Ed25519", "x": jwkOf(ada)["x"], "d": b64.EncodeToString(ada.Seed())}, good["keyProof"].(string)), "publicKey"},
		"X25519 key":               {withProof(map[string]any{"kty": "OKP", "crv": "X25519", "x": jwkOf(ada)["x"]}, good["keyProof"].(string)), "publicKey"},
		"short x":                  {withProof(map[string]any{"kty": "OKP", "crv": "Ed25519", "x": "AAAA"}, good["keyProof"].(string)), "publicKey"},
		"key of small order":       {withProof(smallOrder, good["keyProof"].(string)), "publicKey"},
		"proof not base64url":      {withProof(jwkOf(ada), "!!"), "keyProof"},
		"key not an object":        {map[string]any{"emailProof": k.inv.EmailProof, "inbox": k.inv.Inbox, "publicKey": "x", "keyProof": good["keyProof"]}, "publicKey"},
		"proof of the wrong shape": {withProof(jwkOf(ada), good["keyProof"].(string)+"AA"), "keyProof"},
	}
	for name, c := range refused {
		t.Run(name, func(t *testing.T) {
			r := k.claimInvalid(c.body)
			expect(t, r, 400, "invalid-request")
			if f := r.json(t)["field"]; f != c.field {
				t.Fatalf("field %v, want %s", f, c.field)
			}
		})
	}
	// nothing of the refused claims stuck: the slot is still free
	var first map[string]any
	t.Run("claim", func(t *testing.T) {
		r := k.claim(good)
		expect(t, r, 200, "")
		first = r.json(t)
		if first["countsAsSignature"] != true || first["assurance"] != "recipient-email-proof-possession+key-possession" {
			t.Fatalf("%v", first)
		}
		want := k.bindingV2(ada)
		got, _ := json.Marshal(first["binding"])
		if string(jcs(t, want)) != string(jcs(t, json.RawMessage(got))) {
			t.Fatalf("binding\n got %s\nwant %s", got, jcs(t, want))
		}
		if first["bindingDigest"] != sum(jcs(t, want)) {
			t.Fatalf("bindingDigest %v is not the SHA-256 of the binding the agent built", first["bindingDigest"])
		}
	})
	t.Run("replay", func(t *testing.T) {
		r := k.claim(good)
		expect(t, r, 200, "")
		m := r.json(t)
		if m["participantToken"] != first["participantToken"] || m["bindingDigest"] != first["bindingDigest"] {
			t.Fatal("a replayed keyed claim gave another token or digest")
		}
	})
	t.Run("another key after the claim", func(t *testing.T) {
		expect(t, k.claim(k.keyedClaim(other, other)), 409, "claim-conflict")
	})
	t.Run("no key after a keyed claim", func(t *testing.T) {
		expect(t, k.claim(map[string]any{"emailProof": k.inv.EmailProof, "inbox": k.inv.Inbox}), 409, "claim-conflict")
	})
	t.Run("a key after an unkeyed claim", func(t *testing.T) {
		b := s.agent(c.Participants[1].InvitationID).join()
		kb := &keyed{agent: b, priv: other, origin: s.Origin}
		r := b.exchange()
		expect(t, r, 200, "")
		kb.exchange = r.json(t)
		b.session = kb.exchange["sessionToken"].(string)
		expect(t, b.claim(kb.keyedClaim(other, other)), 409, "claim-conflict")
	})
	t.Run("replay after an amendment", func(t *testing.T) {
		// The first claim's body, sent again once revision 2 is locked: its
		// proof signs the binding of revision 1, which is what it replays.
		out := s.amended(c.AgreementID, map[string]any{"objective": "Decide, with a keyed claim already made."})
		r := k.claim(good)
		expect(t, r, 200, "")
		if m := r.json(t); m["participantToken"] != first["participantToken"] || m["bindingDigest"] != first["bindingDigest"] {
			t.Fatalf("a replayed keyed claim after an amendment gave another token or digest: %v", m)
		}
		// A proof over the new revision's binding signs bytes the stored
		// binding is not: refused, as any proof over other bytes.
		onRev2 := *k
		onRev2.exchange = maps.Clone(k.exchange)
		onRev2.exchange["revisionNumber"], onRev2.exchange["revisionDigest"] = out["revisionNumber"], out["revisionDigest"]
		expect(t, k.claimInvalid(onRev2.keyedClaim(ada, ada)), 400, "invalid-request")
		// Another key conflicts with the claim made, whatever its proof.
		expect(t, k.claim(onRev2.keyedClaim(other, other)), 409, "claim-conflict")
	})
}

// TestUnkeyedClaimUnchanged pins the v1 claim byte for byte: the binding
// member is exactly the participant-binding/v1 object, in its historical
// member order, and its digest the SHA-256 of its canonical bytes.
func TestUnkeyedClaimUnchanged(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Unkeyed claim", s.future())
	a := s.agent(c.Participants[0].InvitationID)
	r := a.exchange()
	expect(t, r, 200, "")
	x := r.json(t)
	a.session = x["sessionToken"].(string)
	r = a.claim(map[string]any{"emailProof": a.inv.EmailProof, "inbox": a.inv.Inbox})
	expect(t, r, 200, "")
	var raw struct {
		Binding           json.RawMessage `json:"binding"`
		BindingDigest     string          `json:"bindingDigest"`
		Assurance         string          `json:"assurance"`
		CountsAsSignature bool            `json:"countsAsSignature"`
	}
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"schema":"%s/schemas/participant-binding/v1","version":1,"agreement_id":"%s","invitation_id":"%s","participant_id":"%s","inbox":"%s","runtime_endpoint":null,"assurance":"recipient-email-proof-possession","revision":1,"revision_digest":"%s"}`,
		s.Origin, x["agreementId"], a.inv.InvitationID, x["participant"].(map[string]any)["participantId"], a.inv.Inbox, x["revisionDigest"])
	if string(raw.Binding) != want {
		t.Fatalf("v1 binding changed:\n got %s\nwant %s", raw.Binding, want)
	}
	if raw.BindingDigest != sum(jcs(t, json.RawMessage(want))) || raw.Assurance != "recipient-email-proof-possession" || raw.CountsAsSignature {
		t.Fatalf("%+v", raw)
	}
}
