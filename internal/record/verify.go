package record

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"time"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/room"
)

// Options are what a verifier may hold besides the record.
type Options struct {
	// Artifact is the exact bytes of CONSENSUS.md to check against the
	// record; nil when not given.
	Artifact []byte
	// Keys is the issuer's JWKS; nil when not given, and then the service
	// signature is skipped, never assumed.
	Keys *jwk.Set
	// Messages are raw reply emails, as received: each must be the message
	// some event's evidence was read from (its SHA-256 is the evidence's
	// raw_sha256).
	Messages [][]byte
}

// verification carries what the checks share.
type verification struct {
	rep *Report
	rec Record
	// canonical is the record's canonical form; commands holds each
	// event's canonical command bytes, cut from it (RFC 8785 is
	// compositional: a member of a canonical document is canonical).
	canonical []byte
	commands  []json.RawMessage
	// revisions are the decoded canonical revisions, in the record's
	// order; revision is the last (the final one).
	revisions []room.Revision
	revision  room.Revision
	// terms maps each revision number to the terms digest recomputed from
	// its canonical object: what the decision rule compares.
	terms  map[int]string
	roster map[string]Participant
	keys   map[string]ed25519.PublicKey
}

// Verify checks a record offline and reports every check: its structure
// (the consensus-record/v1 schema, no duplicate members), that the
// revisions are numbered 1 to n, belong to it, only add participants and
// hash to their revision, Markdown and terms digests, that the roster is
// the final revision's, every command's fields (a revision the record
// holds, with that revision's digest), digest, chain link and (for keyed
// participants) signature, the chain head and event count, that the
// outcome follows from the events by the final revision's decision rule
// (unanimity of the required participants, or a quorum of k of them) under
// the revision rule (a decision on an earlier revision counts exactly when its
// terms digest equals the final one's), the artifact's SHA-256, and the
// service signature against opt.Keys. It never
// stops at the first fault, except when the document cannot be read.
func Verify(raw []byte, opt Options) *Report {
	rep := &Report{}
	v, ok := readRecord(rep, raw)
	if !ok {
		return rep
	}
	v.checkRevisions()
	v.checkRoster()
	v.checkEvents()
	v.checkEvidence()
	v.checkMessages(opt.Messages)
	v.checkOutcome()
	v.checkArtifact(opt.Artifact)
	v.checkServiceSignature(opt.Keys)
	return rep
}

// readRecord runs the format check: one JSON document without duplicate
// members or lone surrogates, valid against consensus-record/v1, whose
// revisions' canonical objects are valid against agreement/v1.
func readRecord(rep *Report, raw []byte) (*verification, bool) {
	// Everything below reads the canonical form, so numbers such as 1.0
	// mean what they mean in the signed bytes.
	raw, err := canon.Transform(raw)
	if err != nil {
		rep.fail(CheckFormat, "not one unambiguous JSON document (duplicate member, lone surrogate or syntax): %v", err)
		return nil, false
	}
	if errs := validate(recordSchemaID, raw); len(errs) > 0 {
		for _, e := range errs {
			rep.fail(CheckFormat, "not a consensus-record/v1 document: %s", e)
		}
		return nil, false
	}
	v := &verification{rep: rep, canonical: raw, terms: map[int]string{}, roster: map[string]Participant{}, keys: map[string]ed25519.PublicKey{}}
	var commands struct {
		Events []struct {
			Command json.RawMessage `json:"command"`
		} `json:"events"`
	}
	if err := json.Unmarshal(raw, &v.rec); err != nil {
		rep.fail(CheckFormat, "cannot decode: %v", err)
		return nil, false
	}
	if err := json.Unmarshal(raw, &commands); err != nil || len(commands.Events) != len(v.rec.Events) {
		rep.fail(CheckFormat, "cannot decode the commands: %v", err)
		return nil, false
	}
	for _, e := range commands.Events {
		v.commands = append(v.commands, e.Command)
	}
	for i, r := range v.rec.Revisions {
		if errs := validate(agreementSchemaID, r.Canonical); len(errs) > 0 {
			for _, e := range errs {
				rep.fail(CheckFormat, "revisions[%d].canonical is not an agreement/v1 object: %s", i, e)
			}
			return nil, false
		}
		var rev room.Revision
		if err := json.Unmarshal(r.Canonical, &rev); err != nil {
			rep.fail(CheckFormat, "cannot decode revisions[%d].canonical: %v", i, err)
			return nil, false
		}
		v.revisions = append(v.revisions, rev)
	}
	v.revision = v.revisions[len(v.revisions)-1]
	if at := badInstant(v); at != "" {
		rep.fail(CheckFormat, "%s is not a valid RFC 3339 instant", at)
		return nil, false
	}
	rep.pass(CheckFormat, "consensus-record/v1, %d participants, %d events", len(v.rec.Participants), len(v.rec.Events))
	return v, true
}

// badInstant names the first instant of the record, in a fixed order
// (issued_at, the outcome, each revision, each event), that does not
// parse: the schema's date-time format admits a leap second, time.Parse
// does not.
func badInstant(v *verification) string {
	bad := func(s string) bool { _, err := time.Parse(time.RFC3339Nano, s); return err != nil }
	switch {
	case bad(v.rec.IssuedAt):
		return "/issued_at"
	case bad(v.rec.Outcome.DecidedAt):
		return "/outcome/decided_at"
	}
	for i, r := range v.revisions {
		switch {
		case bad(r.Deadline):
			return fmt.Sprintf("/revisions/%d/canonical/deadline", i)
		case bad(r.LockedAt):
			return fmt.Sprintf("/revisions/%d/canonical/locked_at", i)
		}
	}
	for i, e := range v.rec.Events {
		if bad(e.CreatedAt) {
			return fmt.Sprintf("/events/%d/created_at", i)
		}
	}
	return ""
}

// checkRoster: the participants are the final revision's, in its
// order, with distinct invitations; a bound key is a usable Ed25519 key and
// comes with a binding.
func (v *verification) checkRoster() {
	n := len(v.rep.Failed)
	want := v.revision.Participants
	if len(v.rec.Participants) != len(want) {
		v.rep.fail(CheckRoster, "%d participants, the final revision has %d", len(v.rec.Participants), len(want))
	}
	invitations := map[string]bool{}
	keyed := 0
	for i, p := range v.rec.Participants {
		if i < len(want) {
			w := want[i]
			if p.ParticipantID != w.ParticipantID || p.DisplayName != w.DisplayName || p.Kind != w.Kind || p.Required != w.Required {
				v.rep.fail(CheckRoster, "participant %d is %s (%q, %s, required %t), the final revision has %s (%q, %s, required %t)",
					i+1, p.ParticipantID, p.DisplayName, p.Kind, p.Required, w.ParticipantID, w.DisplayName, w.Kind, w.Required)
			}
		}
		if _, dup := v.roster[p.ParticipantID]; dup {
			v.rep.fail(CheckRoster, "participant %s is listed twice", p.ParticipantID)
		}
		if invitations[p.InvitationID] {
			v.rep.fail(CheckRoster, "invitation %s is listed for two participants", p.InvitationID)
		}
		v.roster[p.ParticipantID], invitations[p.InvitationID] = p, true
		if p.PublicKey == nil {
			continue
		}
		keyed++
		if err := p.PublicKey.Check(); err != nil {
			v.rep.fail(CheckRoster, "participant %s: the public key is not a usable Ed25519 key: %v", p.ParticipantID, err)
			continue
		}
		pub, _ := p.PublicKey.Public() // Check decoded it
		if p.BindingDigest == nil {
			v.rep.fail(CheckRoster, "participant %s has a public key but no binding", p.ParticipantID)
		}
		v.keys[p.ParticipantID] = pub
	}
	if !v.rep.failedSince(n, CheckRoster) {
		v.rep.pass(CheckRoster, "%d participants as in the final revision, %d with a bound key", len(v.rec.Participants), keyed)
	}
}

// parseInstant reads an RFC 3339 instant; the schema already checked its shape.
func parseInstant(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}
