package record

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/room"
)

// SchemaFmt is the schema URL of a record on an origin.
const SchemaFmt = "%s/schemas/consensus-record/v1"

// Record is the consensus-record/v1 document. Every member is present in
// the JSON, null where it has no value; its bytes are the RFC 8785
// canonical form of the whole object, signature included.
type Record struct {
	Schema      string `json:"schema"`
	Version     int    `json:"version"`
	AgreementID string `json:"agreement_id"`
	Issuer      string `json:"issuer"`
	IssuedAt    string `json:"issued_at"`
	// Revisions holds every locked revision in order, 1 to n, the final
	// one (the revision in force when the outcome was reached) last.
	Revisions      []Revision    `json:"revisions"`
	Participants   []Participant `json:"participants"`
	Events         []Event       `json:"events"`
	Outcome        Outcome       `json:"outcome"`
	ArtifactSHA256 *string       `json:"artifact_sha256"`
	ChainHead      string        `json:"chain_head"`
	EventCount     int           `json:"event_count"`
	// Signature is omitted only from the bytes it signs.
	Signature *Signature `json:"signature,omitempty"`
}

// Revision is one locked revision. Every event names one of them by
// number and revision digest; a decision made on an earlier revision counts
// on the final one exactly when their terms digests are equal.
type Revision struct {
	Number int `json:"number"`
	// Canonical is the agreement/v1 object whose canonical bytes hash to
	// RevisionDigest.
	Canonical      json.RawMessage `json:"canonical"`
	RevisionDigest string          `json:"revision_digest"`
	Markdown       string          `json:"markdown"`
	MarkdownDigest string          `json:"markdown_digest"`
	// TermsDigest is the SHA-256 of the canonical bytes of
	// {decision_rule, objective, rules, title} taken from Canonical.
	TermsDigest string `json:"terms_digest"`
}

// Final returns the last revision: the one in force at the outcome, whose
// roster, deadline and terms the outcome is evaluated on. A record that
// passed the schema has at least one.
func (r Record) Final() Revision {
	return r.Revisions[len(r.Revisions)-1]
}

// Participant is one roster slot: the canonical revision's entry plus its
// invitation, the digest of the binding its claim made (null if never
// claimed) and the public key that binding holds (null without one). The
// inbox, which the binding contains, is never published.
type Participant struct {
	ParticipantID string   `json:"participant_id"`
	DisplayName   string   `json:"display_name"`
	Kind          string   `json:"kind"`
	Required      bool     `json:"required"`
	InvitationID  string   `json:"invitation_id"`
	BindingDigest *string  `json:"binding_digest"`
	PublicKey     *jwk.Key `json:"public_key"`
}

// Event is one stored event. Command is the room-command object whose
// canonical bytes hash to CommandDigest and, for a keyed participant, are
// what Signature signs: version 2, which holds the Idempotency-Key, for a
// keyed participant's event since that version; version 1 otherwise. Hash = SHA-256 of the canonical bytes of
// {command_digest, created_at, prev, seq}.
type Event struct {
	ID            string       `json:"id"`
	Seq           int64        `json:"seq"`
	Command       room.Command `json:"command"`
	CommandDigest string       `json:"command_digest"`
	CreatedAt     string       `json:"created_at"`
	Prev          string       `json:"prev"`
	Hash          string       `json:"hash"`
	Signature     *string      `json:"signature"`
	// Evidence is present only on an event read from a reply email
	// (evidence.go); absent, the event's bytes are as before it existed.
	Evidence *Evidence `json:"evidence,omitempty"`
}

// Outcome is the final outcome. DecidingEventID is null when it expired.
type Outcome struct {
	Status          string  `json:"status"`
	DecidedAt       string  `json:"decided_at"`
	DecidingEventID *string `json:"deciding_event_id"`
}

// Signature is the service's signature over the canonical bytes of the
// record without its signature member.
type Signature struct {
	Kid   string `json:"kid"`
	Alg   string `json:"alg"`
	Value string `json:"value"`
}

// SigningInput returns the bytes the service signs: the canonical form of
// r without its signature.
func (r Record) SigningInput() ([]byte, error) {
	r.Signature = nil
	b, err := canon.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("record: canonical bytes: %w", err)
	}
	return b, nil
}

// Sign signs r with priv under the key's thumbprint and returns the
// record's bytes: the canonical form of the whole signed record.
func Sign(r Record, priv ed25519.PrivateKey) (Record, []byte, error) {
	msg, err := r.SigningInput()
	if err != nil {
		return Record{}, nil, err
	}
	kid := jwk.FromPrivate(priv).Thumbprint()
	r.Signature = &Signature{Kid: kid, Alg: jwk.AlgEd, Value: jwk.Sign(priv, msg)}
	b, err := canon.Marshal(r)
	if err != nil {
		return Record{}, nil, fmt.Errorf("record: canonical bytes: %w", err)
	}
	return r, b, nil
}

// EventHash is the chain link of an event: the SHA-256 of the canonical
// bytes of {command_digest, created_at, prev, seq}, with created_at the
// exact string the event shows.
func EventHash(prev string, seq int64, commandDigest, createdAt string) (string, error) {
	_, d, err := canon.DigestOf(map[string]any{"prev": prev, "seq": seq, "command_digest": commandDigest, "created_at": createdAt})
	return d, err
}
