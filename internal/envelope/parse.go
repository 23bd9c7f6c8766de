package envelope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxEnvelopeBytes bounds the JSON envelope. The issuer's envelopes are about
// 1.5 KB; anything far larger is not one of them.
const MaxEnvelopeBytes = 64 << 10

// Parse validates raw (the bytes of one block) and returns the invitation.
// It runs, in order: a JSON check (one object, valid UTF-8, no duplicate
// keys), the embedded schema (with format assertions; unknown fields are
// refused), then the guide's five checks under p. When the schema refuses
// the envelope and one of the five checks also fails on what could be
// decoded, that check is reported (a bad fragment is "fragment", not
// "schema"), since it is the precise diagnosis. Every refusal is a
// *CheckError; an unusable p is a plain error. Parse performs no I/O.
func Parse(raw []byte, p Policy) (*Invitation, error) {
	origin, err := p.normalize()
	if err != nil {
		return nil, err
	}
	sch, err := compiledSchema()
	if err != nil {
		return nil, fmt.Errorf("envelope: compile schema: %w", err)
	}
	if len(raw) > MaxEnvelopeBytes {
		return nil, checkErr(CheckJSON, "envelope is larger than %d bytes", MaxEnvelopeBytes)
	}
	if !utf8.Valid(raw) {
		return nil, checkErr(CheckJSON, "envelope is not valid UTF-8")
	}
	if err := scanJSON(raw); err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, checkErr(CheckJSON, "envelope is not one JSON value")
	}
	if verr := sch.Validate(doc); verr != nil {
		env := lenientEnvelope(doc)
		if _, cerr := checkEnvelope(&env, origin); cerr != nil {
			return nil, cerr
		}
		return nil, &CheckError{Check: CheckSchema, Detail: describeSchemaError(verr)}
	}
	var env Envelope
	if err := decodeStrict(raw, &env); err != nil {
		return nil, err
	}
	return checkEnvelope(&env, origin)
}

// instants decodes the envelope's two instants as Go times. Go's RFC 3339
// parser is stricter than the schema's date-time format (no leap second, no
// lower-case t or z); an envelope it refuses is refused, though Envelope keeps
// the instants as text.
type instants struct {
	Deadline  time.Time `json:"deadline"`
	ExpiresAt time.Time `json:"expires_at"`
}

// decodeStrict decodes raw into env and its instants, refusing unknown
// fields.
func decodeStrict(raw []byte, env *Envelope) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var t instants
	if dec.Decode(env) != nil || json.Unmarshal(raw, &t) != nil {
		// The schema admits a few spellings Go will not decode into these
		// types (1.0 for an integer); the issuer never writes them.
		return checkErr(CheckSchema, "envelope does not decode into the v1 fields")
	}
	return nil
}

// lenientEnvelope picks out of a schema-invalid document the string fields
// the five checks read; anything missing or of another type stays empty.
func lenientEnvelope(doc any) Envelope {
	str := func(m map[string]any, k string) string {
		s, _ := m[k].(string)
		return s
	}
	obj := func(m map[string]any, k string) map[string]any {
		o, _ := m[k].(map[string]any)
		return o
	}
	root, _ := doc.(map[string]any)
	ex, cl := obj(root, "agent_exchange"), obj(root, "agent_claim")
	return Envelope{
		InvitationID:  str(root, "invitation_id"),
		InviteURI:     str(root, "invite_uri"),
		AgentExchange: ExchangeAction{Method: str(ex, "method"), Href: str(ex, "href")},
		AgentClaim:    ClaimAction{Method: str(cl, "method"), Href: str(cl, "href"), EmailProof: str(cl, "email_proof")},
		Docs:          str(root, "docs"),
	}
}
