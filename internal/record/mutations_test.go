package record

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"testing"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
)

// mutation is one single-field change of a valid vector that must fail.
// raw edits the JSON as a tampering copier would (no signature redone);
// sealed edits the record as a dishonest service would, recomputing every
// digest and chain link it can and signing again with the service key, so
// only what the service cannot forge catches it.
type mutation struct {
	name, base, description string
	expect                  []string
	raw                     func(m map[string]any)
	sealed                  func(r *Record)
	artifact                func(b []byte) []byte
	otherKeys               bool
	bytes                   func(b []byte) []byte
}

func events(m map[string]any) []any       { return m["events"].([]any) }
func obj(v any) map[string]any            { return v.(map[string]any) }
func participants(m map[string]any) []any { return m["participants"].([]any) }
func revisions(m map[string]any) []any    { return m["revisions"].([]any) }

var mutations = []mutation{
	{name: "changed-body", base: "reached-mixed", description: "The first comment's body is edited in the file.",
		expect: []string{CheckCommandDigest, CheckParticipantSignature, CheckServiceSignature},
		raw: func(m map[string]any) {
			obj(obj(events(m)[0])["command"])["body"] = "Wednesday 10:00 UTC works."
		}},
	{name: "changed-body-resealed", base: "reached-mixed", description: "The service edits a keyed participant's comment and recomputes its digest, the chain and its own signature: the participant's signature still fails.",
		expect: []string{CheckParticipantSignature},
		sealed: func(r *Record) { r.Events[0].Command.Body = "Wednesday 10:00 UTC works." }},
	{name: "reordered-events", base: "reached-mixed", description: "Events 1 and 2 swap places in the file.",
		expect: []string{CheckChain, CheckServiceSignature},
		raw: func(m map[string]any) {
			ev := events(m)
			ev[0], ev[1] = ev[1], ev[0]
		}},
	{name: "dropped-tail", base: "reached-mixed", description: "The last event (the deciding agreement) is removed from the file.",
		expect: []string{CheckChainHead, CheckEventCount, CheckOutcome, CheckServiceSignature},
		raw:    func(m map[string]any) { m["events"] = events(m)[:len(events(m))-1] }},
	{name: "dropped-tail-resealed", base: "reached-mixed", description: "The service removes the deciding event and fixes the chain head, the count and its signature: the outcome no longer follows from the events.",
		expect: []string{CheckOutcome},
		sealed: func(r *Record) { r.Events = r.Events[:len(r.Events)-1] }},
	{name: "swapped-key", base: "reached-mixed", description: "Ada's bound public key is replaced by another valid key in the file.",
		expect: []string{CheckParticipantSignature, CheckServiceSignature},
		raw: func(m map[string]any) {
			obj(participants(m)[0])["public_key"] = map[string]any{"kty": "OKP", "crv": "Ed25519", "x": jwk.FromPublic(testKey("participant mallory").Public().(ed25519.PublicKey)).X}
		}},
	{name: "swapped-key-resealed", base: "reached-mixed", description: "The service binds its own key for Ada and signs again: Ada's signatures no longer verify.",
		expect: []string{CheckParticipantSignature},
		sealed: func(r *Record) {
			k := jwk.FromPublic(testKey("participant mallory").Public().(ed25519.PublicKey))
			r.Participants[0].PublicKey = &k
		}},
	{name: "signature-stripped-resealed", base: "disagreed", description: "The service removes a keyed participant's signature from its decision and signs again.",
		expect: []string{CheckParticipantSignature},
		sealed: func(r *Record) { r.Events[2].Signature = nil }},
	{name: "forged-service-signature", base: "disagreed", description: "The record is signed by another key under the service key's kid.",
		expect: []string{CheckServiceSignature},
		raw: func(m map[string]any) {
			msg := signingInputOf(m)
			obj(m["signature"])["value"] = jwk.Sign(testKey(otherServiceKey), msg)
		}},
	{name: "unknown-kid", base: "disagreed", description: "The record names a kid the JWKS does not publish.",
		expect: []string{CheckServiceSignature},
		raw: func(m map[string]any) {
			obj(m["signature"])["kid"] = jwk.FromPublic(testKey(otherServiceKey).Public().(ed25519.PublicKey)).Thumbprint()
		}},
	{name: "wrong-jwks", base: "no-consensus", description: "An intact record checked against another deployment's JWKS.",
		expect: []string{CheckServiceSignature}, otherKeys: true},
	{name: "changed-artifact-byte", base: "reached-mixed", description: "One byte of CONSENSUS.md changes.",
		expect:   []string{CheckArtifact},
		artifact: func(b []byte) []byte { b = bytes.Clone(b); b[len(b)/2] ^= 0x01; return b }},
	{name: "changed-revision", base: "no-consensus", description: "The canonical revision's title is edited in the file (the title is part of the terms).",
		expect: []string{CheckRevisionDigest, CheckTermsDigest, CheckServiceSignature},
		raw:    func(m map[string]any) { obj(obj(revisions(m)[0])["canonical"])["title"] = "Another title" }},
	{name: "quorum-decided-as-unanimity-resealed", base: "quorum-disagreed", description: "The service states the 2-of-3 room disagreed by Ada's disagreement, as unanimity would decide it, and signs again: under the quorum two agreements were still possible then, and Bo's abstention decided it.",
		expect: []string{CheckOutcome},
		sealed: func(r *Record) {
			r.Outcome.DecidingEventID, r.Outcome.DecidedAt = &r.Events[0].ID, r.Events[0].CreatedAt
		}},
	{name: "quorum-stale-agree-counted-resealed", base: "quorum-rule-amended", description: "The service drops Cy's agreement and states the room reached by Ada's agreement on revision 2, counting Bo's agreement made under the old rule, and signs again.",
		expect: []string{CheckOutcome},
		sealed: func(r *Record) {
			r.Events = r.Events[:len(r.Events)-1]
			last := r.Events[len(r.Events)-1]
			r.Outcome.DecidingEventID, r.Outcome.DecidedAt = &last.ID, last.CreatedAt
		}},
	{name: "changed-outcome-resealed", base: "disagreed", description: "The service turns disagreed into no_consensus and signs again.",
		expect: []string{CheckOutcome},
		sealed: func(r *Record) { r.Outcome.Status = "no_consensus" }},
	{name: "event-after-deadline-resealed", base: "expired", description: "The service adds an agreement after the deadline and signs again; the roster's second slot was never claimed either.",
		expect: []string{CheckCommand, CheckOutcome},
		sealed: func(r *Record) {
			e := r.Events[0]
			e.ID, e.Seq, e.CreatedAt, e.Signature = fixedID("late"), 2, "2026-09-04T12:00:00.000001Z", nil
			e.Command.ParticipantID, e.Command.InvitationID = r.Participants[1].ParticipantID, r.Participants[1].InvitationID
			r.Events = append(r.Events, e)
		}},
	{name: "duplicate-member", base: "reached-unkeyed", description: "The file repeats a member name, which JSON parsers resolve differently.",
		expect: []string{CheckFormat},
		bytes: func(b []byte) []byte {
			return bytes.Replace(b, []byte(`{"agreement_id":`), []byte(`{"event_count":0,"agreement_id":`), 1)
		}},
	{name: "lone-surrogate", base: "reached-mixed", description: "A body holds an escaped lone surrogate, which has no UTF-8 form and hashes differently in every library.",
		expect: []string{CheckFormat},
		bytes: func(b []byte) []byte {
			return bytes.Replace(b, []byte("🙂"), []byte(`\ud83d`), 1)
		}},
	{name: "impossible-date", base: "no-consensus", description: "issued_at names February 30th.",
		expect: []string{CheckFormat},
		raw:    func(m map[string]any) { m["issued_at"] = "2026-02-30T12:01:01.123456Z" }},
	{name: "seq-not-integer", base: "no-consensus", description: "A seq is a fraction.",
		expect: []string{CheckFormat},
		raw:    func(m map[string]any) { obj(events(m)[0])["seq"] = json.Number("1.5") }},
	{name: "small-order-key-resealed", base: "no-consensus", description: "The service binds the neutral point as Ada's key, under which one fixed signature verifies for every message, and signs again: both verifiers refuse the key.",
		expect: []string{CheckRoster},
		sealed: func(r *Record) {
			neutral := append([]byte{1}, make([]byte, 31)...)
			r.Participants[0].PublicKey = &jwk.Key{Kty: jwk.KtyOKP, Crv: jwk.CrvEd, X: jwk.EncodeSignature(neutral)}
			universal := jwk.EncodeSignature(append(bytes.Clone(neutral), make([]byte, 32)...))
			r.Events[1].Signature = &universal
		}},
	{name: "unknown-revision-resealed", base: "amended-stale", description: "The service makes Bo's change request name revision 4, which the record does not hold, and signs again.",
		expect: []string{CheckCommand},
		sealed: func(r *Record) { r.Events[1].Command.Revision = 4 }},
	{name: "wrong-revision-digest-resealed", base: "amended-stale", description: "The service makes Bo's agreement on revision 2 carry revision 1's digest, and signs again.",
		expect: []string{CheckCommand},
		sealed: func(r *Record) { r.Events[2].Command.RevisionDigest = r.Revisions[0].RevisionDigest }},
	{name: "changed-terms-digest", base: "amended-stale", description: "Revision 1's terms digest is replaced in the file by the final revision's, as if Ada's stale agreement still counted.",
		expect: []string{CheckTermsDigest, CheckServiceSignature},
		raw: func(m map[string]any) {
			revs := revisions(m)
			obj(revs[0])["terms_digest"] = obj(revs[len(revs)-1])["terms_digest"]
		}},
	{name: "changed-terms-digest-resealed", base: "amended-stale", description: "The service states revision 1's terms digest as the final revision's and signs again; the terms recomputed from revision 1 differ.",
		expect: []string{CheckTermsDigest},
		sealed: func(r *Record) { r.Revisions[0].TermsDigest = r.Final().TermsDigest }},
	{name: "stale-decision-counted-resealed", base: "amended-stale", description: "The service drops Ada's agreement on revision 3 and states the room reached by Bo's agreement, counting Ada's stale agreement on revision 1, and signs again.",
		expect: []string{CheckOutcome},
		sealed: func(r *Record) {
			r.Events = r.Events[:3]
			r.Outcome.DecidingEventID, r.Outcome.DecidedAt = &r.Events[2].ID, r.Events[2].CreatedAt
		}},
	{name: "decided-again-resealed", base: "amended-same-terms", description: "The service adds a second agreement by Ada on revision 2, although her agreement on revision 1 still counts (same terms), and signs again; it cannot sign as Ada either.",
		expect: []string{CheckCommand, CheckParticipantSignature},
		sealed: func(r *Record) {
			again := r.Events[2]
			again.ID, again.Signature = fixedID("ada again"), r.Events[0].Signature
			again.Command.ParticipantID, again.Command.InvitationID = r.Participants[0].ParticipantID, r.Participants[0].InvitationID
			r.Events = append(r.Events[:3:3], append([]Event{again}, r.Events[3:]...)...)
			for i := range r.Events {
				r.Events[i].Seq = int64(i + 1)
			}
		}},
	{name: "replayed-signature-resealed", base: "reached-mixed", description: "A holder of Ada's participant token, not her key, posted her signed room-command/v1 comment again under a new Idempotency-Key (v1 binds none) and the event was stored; the record is sealed as issued. The signature verifies over the copy, but it repeats the signature of the first event.",
		expect: []string{CheckParticipantSignature},
		sealed: func(r *Record) { r.Events = repeatEvent(r.Events, 0, 1, "") }},
	{name: "replayed-signature-v2-resealed", base: "reached-signed-v2", description: "The same replay of Ada's room-command/v2 comment under a new Idempotency-Key: the copy's idempotency_key differs, so her signature does not verify over it, and it repeats the signature of the first event.",
		expect: []string{CheckParticipantSignature},
		sealed: func(r *Record) { r.Events = repeatEvent(r.Events, 0, 1, "idem-stolen") }},
	{name: "repeated-signature-v2-resealed", base: "reached-signed-v2", description: "The service stores Ada's room-command/v2 comment a second time, command and Idempotency-Key unchanged, and signs again: the signature verifies over the copy, but a signature speaks for one event.",
		expect: []string{CheckParticipantSignature},
		sealed: func(r *Record) { r.Events = repeatEvent(r.Events, 0, 1, "") }},
	{name: "unknown-member", base: "reached-unkeyed", description: "The file adds a member the schema does not define.",
		expect: []string{CheckFormat},
		raw:    func(m map[string]any) { m["note"] = "trust me" }},
}

// signingInputOf returns the canonical bytes of m without its signature.
func signingInputOf(m map[string]any) []byte {
	c := make(map[string]any, len(m))
	for k, v := range m {
		if k != "signature" {
			c[k] = v
		}
	}
	b, err := canon.Marshal(c)
	if err != nil {
		panic(err)
	}
	return b
}

// reseal recomputes what the service can: command digests, the chain, the
// head, the count, and its signature. Participant signatures stay as they are.
func reseal(t testing.TB, r Record) []byte {
	t.Helper()
	prev := canon.ZeroHash
	for i := range r.Events {
		e := &r.Events[i]
		_, d, err := canon.DigestOf(e.Command)
		if err != nil {
			t.Fatal(err)
		}
		e.CommandDigest, e.Prev = d, prev
		if e.Hash, err = EventHash(prev, e.Seq, d, e.CreatedAt); err != nil {
			t.Fatal(err)
		}
		prev = e.Hash
	}
	r.ChainHead, r.EventCount = prev, len(r.Events)
	_, b, err := Sign(r, testKey(serviceKey))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// apply returns the mutated record bytes and artifact.
func (mu mutation) apply(t testing.TB, r Record, b, artifact []byte) ([]byte, []byte) {
	t.Helper()
	switch {
	case mu.raw != nil:
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		mu.raw(m)
		out, err := canon.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b = out
	case mu.sealed != nil:
		c := r
		c.Events = append([]Event(nil), r.Events...)
		c.Participants = append([]Participant(nil), r.Participants...)
		c.Revisions = append([]Revision(nil), r.Revisions...)
		mu.sealed(&c)
		b = reseal(t, c)
	case mu.bytes != nil:
		b = mu.bytes(b)
	}
	if mu.artifact != nil {
		artifact = mu.artifact(artifact)
	}
	return b, artifact
}

// repeatEvent returns events with a copy of events[i] inserted at position
// at (a new id, numbered in order), its idempotency_key set to key when key
// is not empty, its signature unchanged.
func repeatEvent(events []Event, i, at int, key string) []Event {
	again := events[i]
	again.ID = fixedID("again " + events[i].ID)
	if key != "" {
		again.Command.IdempotencyKey = key
	}
	out := append(append(events[:at:at], again), events[at:]...)
	for n := range out {
		out[n].Seq = int64(n + 1)
	}
	return out
}
