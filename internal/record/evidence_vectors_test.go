package record

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/room"
)

// replyScenario is a room where a person decides by replying to the
// invitation email: her comment and her agreement carry DKIM evidence.
var replyScenario = scenario{
	name: "reached-reply",
	description: "An unkeyed person comments and agrees by replying to the invitation email; both events carry the DKIM evidence " +
		"(Ed25519, relaxed canonicalization, signed by a subdomain of her address's domain), which both verifiers re-check offline.",
	members: []member{
		{name: "Ada (agent)", kind: room.KindAgent, required: true, key: "participant ada"},
		{name: "Dee", kind: room.KindHuman, required: true},
	},
	acts: []act{
		{1, room.ActionComment, "Fine by me, if the drill runs first.", 60, nil},
		{0, room.ActionAgree, "", 120, nil},
		{1, room.ActionAgree, "", 180, nil},
	},
	issuedAfter: 181,
}

// replyEvidence is the evidence of a reply from dee@example.org, signed by
// mail.example.org with a test key (DKIM keys are published, so a test
// key derived from a public label is as good as any).
func replyEvidence(messageID, body string, signer ed25519.PrivateKey, domain string) Evidence {
	bh := sha256.Sum256([]byte(body))
	bodyHash := base64.StdEncoding.EncodeToString(bh[:])
	signed := "from:Dee <dee@example.org>\r\n" +
		"to:replies+tag@consensus.example\r\n" +
		"subject:Re: CONSENSUS.md: invitation\r\n" +
		"message-id:" + messageID + "\r\n" +
		"dkim-signature:v=1; a=ed25519-sha256; c=relaxed/relaxed; d=" + domain + "; s=sel2026; h=from:to:subject:message-id; bh=" + bodyHash + "; b="
	h := sha256.Sum256([]byte(signed))
	raw := sha256.Sum256([]byte(signed + body))
	return Evidence{
		Kind: EvidenceKind, MessageID: messageID, RawSHA256: hex.EncodeToString(raw[:]), From: "dee@example.org",
		DKIM: DKIMEvidence{
			Result: "pass", Domain: domain, Selector: "sel2026", Algorithm: "ed25519-sha256", BodyHash: bodyHash,
			Signature:     base64.StdEncoding.EncodeToString(ed25519.Sign(signer, h[:])),
			SignedHeaders: signed,
			KeyRecord:     "v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(signer.Public().(ed25519.PublicKey)),
		},
	}
}

// replyMutations must fail the reply-evidence check.
var replyMutations = []mutation{
	{name: "reply-signature-byte", base: "reached-reply", description: "One character of the first reply's DKIM signature is changed in the file.",
		expect: []string{CheckReplyEvidence, CheckServiceSignature},
		raw: func(m map[string]any) {
			d := obj(obj(obj(events(m)[0])["evidence"])["dkim"])
			s := d["signature"].(string)
			d["signature"] = flipBase64(s)
		}},
	{name: "reply-changed-from-resealed", base: "reached-reply", description: "The service claims the reply came from another address of the same domain and signs the record again: the signed From no longer verifies.",
		expect: []string{CheckReplyEvidence},
		sealed: func(r *Record) {
			ev := *r.Events[0].Evidence
			ev.From = "zoe@example.org"
			ev.DKIM.SignedHeaders = strings.Replace(ev.DKIM.SignedHeaders, "Dee <dee@example.org>", "Zoe <zoe@example.org>", 1)
			r.Events[0].Evidence = &ev
		}},
	{name: "reply-swapped-key-record-resealed", base: "reached-reply", description: "The service replaces the stored key record with another key: the signature does not verify with it.",
		expect: []string{CheckReplyEvidence},
		sealed: func(r *Record) {
			ev := *r.Events[2].Evidence
			other := testKey("dkim mallory.example")
			ev.DKIM.KeyRecord = "v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(other.Public().(ed25519.PublicKey))
			r.Events[2].Evidence = &ev
		}},
	{name: "reply-misaligned-resealed", base: "reached-reply", description: "The service signs the reply itself with a key of its own domain: the signature verifies, but its domain does not align with the From address.",
		expect: []string{CheckReplyEvidence},
		sealed: func(r *Record) {
			ev := replyEvidence("<agree@example.org>", "AGREE\r\n", testKey("dkim consensus.example"), "consensus.example")
			r.Events[2].Evidence = &ev
		}},
}

func flipBase64(s string) string {
	c := "A"
	if s[0] == 'A' {
		c = "B"
	}
	return c + s[1:]
}

// addReplyVectors adds the reply scenario and its mutations to files and
// the manifest.
func addReplyVectors(t testing.TB, files map[string][]byte, man *Manifest) {
	t.Helper()
	dkimKey := testKey("dkim mail.example.org")
	sc := replyScenario
	sc.evidence = map[int]Evidence{
		0: replyEvidence("<comment@example.org>", "Fine by me, if the drill runs first.\r\n", dkimKey, "mail.example.org"),
		2: replyEvidence("<agree@example.org>", "AGREE\r\n", dkimKey, "mail.example.org"),
	}
	in, artifact := sc.build(t)
	r, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	r, b, err := Sign(r, testKey(serviceKey))
	if err != nil {
		t.Fatal(err)
	}
	name := replyScenario.name
	files[name+".record.json"] = b
	art := name + ".CONSENSUS.md"
	files[art] = artifact
	man.Vectors = append(man.Vectors, Vector{Name: name, Description: replyScenario.description, Record: name + ".record.json", Artifact: &art, Keys: "keys.jwks.json", Expect: []string{}})
	for _, mu := range replyMutations {
		mb, _ := mu.apply(t, r, b, artifact)
		files[mu.name+".record.json"] = mb
		man.Vectors = append(man.Vectors, Vector{Name: mu.name, Description: mu.description, Record: mu.name + ".record.json", Artifact: &art, Keys: "keys.jwks.json", Expect: mu.expect})
	}
}
