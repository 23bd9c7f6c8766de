package record

import (
	"encoding/json"
	"fmt"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/room"
)

// checkEvents walks the events in order: command fields, command digest,
// chain link and participant signature of each, then the chain head and
// the event count.
func (v *verification) checkEvents() {
	n := len(v.rep.Failed)
	r := v.rec
	prev, signed, lastRevision := canon.ZeroHash, 0, 0
	decisions := map[string][]room.Event{}
	signatures := map[string]string{} // each signature seen, to the event that first carried it
	actions := map[string]string{}    // the action of each earlier event, by id
	for i, e := range r.Events {
		at := fmt.Sprintf("event %d (seq %d, id %s)", i+1, e.Seq, e.ID)
		c := e.Command
		p, onRoster := v.roster[c.ParticipantID]
		v.checkCommand(at, c, p, onRoster)
		if c.Revision < lastRevision {
			v.rep.fail(CheckCommand, "%s: names revision %d after an event on revision %d; a command names the revision in force, and revisions only advance", at, c.Revision, lastRevision)
		}
		lastRevision = max(lastRevision, c.Revision)
		v.checkAddressing(at, c, actions)
		actions[e.ID] = c.Action
		if room.IsTerminal(c.Action) {
			v.checkAdmitted(at, e, decisions)
		}
		msg := v.commands[i]
		if got := canon.Digest(msg); got != e.CommandDigest {
			v.rep.fail(CheckCommandDigest, "%s: the command hashes to %s, the event states %s", at, got, e.CommandDigest)
		}
		if e.Seq != int64(i+1) {
			v.rep.fail(CheckChain, "%s: seq is %d, want %d (events must be numbered 1, 2, ... in order)", at, e.Seq, i+1)
		}
		if e.Prev != prev {
			v.rep.fail(CheckChain, "%s: prev is %s, the previous event's hash is %s", at, e.Prev, prev)
		}
		if h, err := EventHash(e.Prev, e.Seq, e.CommandDigest, e.CreatedAt); err != nil || h != e.Hash {
			v.rep.fail(CheckChain, "%s: hash is %s, {command_digest, created_at, prev, seq} hashes to %s", at, e.Hash, h)
		}
		prev = e.Hash
		if onRoster && v.checkSignature(at, e, p, msg) {
			signed++
		}
		if e.Signature != nil {
			if first, seen := signatures[*e.Signature]; seen {
				v.rep.fail(CheckParticipantSignature, "%s: repeats the signature of %s; a participant signs each event once, so the same signature on a second event is a replay", at, first)
			} else {
				signatures[*e.Signature] = at
			}
		}
	}
	if !v.rep.failedSince(n, CheckCommand) {
		v.rep.pass(CheckCommand, "%d commands name this agreement, a revision it holds with its digest, and their participant's invitation", len(r.Events))
	}
	if !v.rep.failedSince(n, CheckCommandDigest) {
		v.rep.pass(CheckCommandDigest, "%d command digests recompute", len(r.Events))
	}
	if !v.rep.failedSince(n, CheckChain) {
		v.rep.pass(CheckChain, "%d links recompute from 64 zeros", len(r.Events))
	}
	if !v.rep.failedSince(n, CheckParticipantSignature) {
		v.rep.pass(CheckParticipantSignature, "events signed with the author's bound key: %d; by participants without a key: %d", signed, len(r.Events)-signed)
	}
	if r.ChainHead != prev {
		v.rep.fail(CheckChainHead, "chain_head is %s, the last event's hash is %s", r.ChainHead, prev)
	} else {
		v.rep.pass(CheckChainHead, "%s", prev)
	}
	if r.EventCount != len(r.Events) {
		v.rep.fail(CheckEventCount, "event_count is %d, the record holds %d events", r.EventCount, len(r.Events))
	} else {
		v.rep.pass(CheckEventCount, "%d", r.EventCount)
	}
}

// checkCommand: a command names the record's schema origin and agreement,
// a revision the record holds with that revision's digest, a participant
// on the roster of that revision who claimed its slot, that participant's
// invitation, and a legal action and body.
func (v *verification) checkCommand(at string, c room.Command, p Participant, onRoster bool) {
	r := v.rec
	switch c.Version {
	case 2:
		// The object a keyed participant signs: its signature binds the
		// Idempotency-Key, so it speaks for this event only.
		if want := fmt.Sprintf(room.RoomCommandV2SchemaFmt, r.Issuer); c.Schema != want {
			v.rep.fail(CheckCommand, "%s: schema is %s, want %s", at, c.Schema, want)
		}
		if !room.ValidIdempotencyKey(c.IdempotencyKey) {
			v.rep.fail(CheckCommand, "%s: a room-command/v2 needs idempotency_key matching %s", at, room.IdempotencyKeyPattern)
		}
		if onRoster && p.PublicKey == nil {
			v.rep.fail(CheckCommand, "%s: is a room-command/v2, which only a participant that bound a key signs; participant %s bound none", at, c.ParticipantID)
		}
	default:
		if want := fmt.Sprintf(room.RoomCommandSchemaFmt, r.Issuer); c.Schema != want || c.Version != 1 || c.IdempotencyKey != "" {
			v.rep.fail(CheckCommand, "%s: schema is %s, version %d, want %s, version 1 and no idempotency_key", at, c.Schema, c.Version, want)
		}
	}
	if c.AgreementID != r.AgreementID {
		v.rep.fail(CheckCommand, "%s: agreement_id is %s, the record's is %s", at, c.AgreementID, r.AgreementID)
	}
	named, canonical, known := v.revisionOf(c.Revision)
	switch {
	case !known:
		v.rep.fail(CheckCommand, "%s: names revision %d, the record holds revisions 1 to %d", at, c.Revision, len(r.Revisions))
	case c.RevisionDigest != named.RevisionDigest:
		v.rep.fail(CheckCommand, "%s: names revision %d with digest %s, revision %d's digest is %s", at, c.Revision, c.RevisionDigest, c.Revision, named.RevisionDigest)
	case !onRevision(canonical, c.ParticipantID):
		v.rep.fail(CheckCommand, "%s: participant %s is not on revision %d's roster, the revision the command names", at, c.ParticipantID, c.Revision)
	}
	switch {
	case !onRoster:
		v.rep.fail(CheckCommand, "%s: participant %s is not on the roster", at, c.ParticipantID)
	case c.InvitationID != p.InvitationID:
		v.rep.fail(CheckCommand, "%s: invitation_id is %s, participant %s's invitation is %s", at, c.InvitationID, c.ParticipantID, p.InvitationID)
	case p.BindingDigest == nil:
		v.rep.fail(CheckCommand, "%s: participant %s never claimed its slot, so it cannot have posted", at, c.ParticipantID)
	}
	if err := room.ValidateCommand(c.Action, c.Body); err != nil {
		v.rep.fail(CheckCommand, "%s: %v", at, err)
	}
}

// checkAddressing: to names, on a question or change request only,
// distinct participants of the revision the command names other than its
// author; in_reply_to names, on a comment only, an earlier question or
// change request of the record (earlier holds the earlier events' actions).
func (v *verification) checkAddressing(at string, c room.Command, earlier map[string]string) {
	var reply *string
	if c.InReplyTo != "" {
		reply = &c.InReplyTo
	}
	if err := room.ValidateAddressing(c.Action, c.To, reply); err != nil {
		v.rep.fail(CheckCommand, "%s: %v", at, err)
		return
	}
	if _, canonical, known := v.revisionOf(c.Revision); known && c.To != nil {
		members := make([]string, len(canonical.Participants))
		for i, p := range canonical.Participants {
			members[i] = p.ParticipantID
		}
		if err := room.CheckAddressees(c.To, c.ParticipantID, members); err != nil {
			v.rep.fail(CheckCommand, "%s: %v", at, err)
		}
	}
	if reply != nil {
		action, found := earlier[*reply]
		if err := room.CheckReplyTarget(found, action); err != nil {
			v.rep.fail(CheckCommand, "%s: %v (no earlier event of the record)", at, err)
		}
	}
}

func onRevision(rev room.Revision, participantID string) bool {
	for _, p := range rev.Participants {
		if p.ParticipantID == participantID {
			return true
		}
	}
	return false
}

// checkAdmitted: a terminal event is admitted only when its participant has
// no decision that counts on the revision the event names (a decision is
// never changed, but one made stale by changed terms may be made again).
// prior holds each participant's earlier terminal events; e is added.
func (v *verification) checkAdmitted(at string, e Event, prior map[string][]room.Event) {
	c := e.Command
	h := room.History{Current: c.Revision, Terms: v.terms, Events: prior[c.ParticipantID]}
	if st, ok := h.Standings()[c.ParticipantID]; ok && !st.Stale {
		v.rep.fail(CheckCommand, "%s: participant %s already has a decision that counts on revision %d (event %s, made on revision %d); a decision is never changed",
			at, c.ParticipantID, c.Revision, st.Event.ID, st.Event.Revision)
	}
	prior[c.ParticipantID] = append(prior[c.ParticipantID], room.Event{ID: e.ID, Seq: e.Seq, ParticipantID: c.ParticipantID,
		Revision: c.Revision, Action: c.Action, CreatedAt: parseInstant(e.CreatedAt)})
}

// checkSignature: a keyed participant's event carries a signature that
// verifies over the canonical command bytes (room-command/v2, or v1 in an
// event stored before v2) with its bound key; an unkeyed participant's
// event carries none. It reports whether a signature verified. That no
// signature appears twice is checkEvents'.
func (v *verification) checkSignature(at string, e Event, p Participant, msg []byte) bool {
	pub, keyed := v.keys[p.ParticipantID]
	switch {
	case p.PublicKey == nil && e.Signature != nil:
		v.rep.fail(CheckParticipantSignature, "%s: carries a signature, but participant %s bound no key", at, p.ParticipantID)
	case p.PublicKey == nil || !keyed:
		// unkeyed, or a key the roster check refused
	case e.Signature == nil:
		v.rep.fail(CheckParticipantSignature, "%s: participant %s bound a key, but the event carries no signature", at, p.ParticipantID)
	case jwk.Verify(pub, msg, *e.Signature) != nil:
		v.rep.fail(CheckParticipantSignature, "%s: the signature does not verify with participant %s's bound key %s", at, p.ParticipantID, p.PublicKey.Thumbprint())
	default:
		return true
	}
	return false
}

// checkOutcome applies the final revision's decision rule (unanimity of
// the required participants, or a quorum of them) under the revision rule to the
// events, as of the record's issue time, and compares the result with the
// stated outcome: each participant's decision counts on the final revision
// exactly when it was made on a revision whose recomputed terms digest
// equals the final one's; the final revision's roster and deadline apply.
// No event may follow the deciding one, or the deadline when expired.
func (v *verification) checkOutcome() {
	n, r := len(v.rep.Failed), v.rec
	roster := make([]room.Member, len(r.Participants))
	for i, p := range r.Participants {
		roster[i] = room.Member{ID: p.ParticipantID, Required: p.Required}
	}
	events := make([]room.Event, len(r.Events))
	for i, e := range r.Events {
		events[i] = room.Event{ID: e.ID, Seq: e.Seq, ParticipantID: e.Command.ParticipantID, Revision: e.Command.Revision,
			Action: e.Command.Action, CreatedAt: parseInstant(e.CreatedAt)}
	}
	deadline := parseInstant(v.revision.Deadline)
	h := room.History{Current: v.revision.Revision, Terms: v.terms, Roster: roster, Events: events, Deadline: deadline, Rule: v.revision.DecisionRule}
	rule := v.ruleName()
	got := h.Outcome(parseInstant(r.IssuedAt))
	stated := r.Outcome
	deciding := ""
	if stated.DecidingEventID != nil {
		deciding = *stated.DecidingEventID
	}
	if got.Status != stated.Status || got.DecidingEventID != deciding || (got.Final() && !got.DecidedAt.Equal(parseInstant(stated.DecidedAt))) {
		v.rep.fail(CheckOutcome, "by %s under the revision rule the events give %s, the record states %s", rule,
			describe(got.Status, canon.FormatTime(got.DecidedAt), got.DecidingEventID), describe(stated.Status, stated.DecidedAt, deciding))
	}
	last := decidingSeq(events, got.DecidingEventID)
	for _, e := range events {
		if !e.CreatedAt.Before(deadline) {
			v.rep.fail(CheckOutcome, "event seq %d was created at %s, not before the deadline %s, when the room had closed", e.Seq, canon.FormatTime(e.CreatedAt), v.revision.Deadline)
		}
		if got.DecidingEventID != "" && e.Seq > last {
			v.rep.fail(CheckOutcome, "event seq %d follows the deciding event, when the room had closed", e.Seq)
		}
	}
	if !v.rep.failedSince(n, CheckOutcome) {
		v.rep.pass(CheckOutcome, "%s follows from the events by %s on revision %d%s", stated.Status, rule, v.revision.Revision, v.staleNote(h))
	}
}

// ruleName is the final revision's rule for a message: its name and, for
// a quorum, the rule in words.
func (v *verification) ruleName() string {
	r := v.revision.DecisionRule
	if !r.IsQuorum() {
		return room.RuleUnanimity
	}
	return fmt.Sprintf("quorum (%s)", r.Words(room.RequiredCount(v.revision)))
}

// staleNote counts the decisions that stayed stale on the final revision.
func (v *verification) staleNote(h room.History) string {
	stale := 0
	for _, st := range h.Standings() {
		if st.Stale {
			stale++
		}
	}
	if stale == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d stale decisions not counted)", stale)
}

// describe writes an outcome for a message: "pending", "expired at T",
// "reached at T by event E".
func describe(status, at, event string) string {
	switch {
	case status == room.StatusPending:
		return status
	case event == "":
		return status + " at " + at
	default:
		return status + " at " + at + " by event " + event
	}
}

func decidingSeq(events []room.Event, id string) int64 {
	for _, e := range events {
		if e.ID == id {
			return e.Seq
		}
	}
	return 0
}

// checkArtifact: a reached record states the artifact's SHA-256 and no
// other does; a given artifact must hash to it.
func (v *verification) checkArtifact(artifact []byte) {
	n, r := len(v.rep.Failed), v.rec
	reached := r.Outcome.Status == room.StatusReached
	if reached != (r.ArtifactSHA256 != nil) {
		v.rep.fail(CheckArtifact, "outcome %s with artifact_sha256 %s: only a reached outcome has CONSENSUS.md", r.Outcome.Status, orNull(r.ArtifactSHA256))
	}
	switch {
	case artifact == nil:
		v.rep.skip(CheckArtifact, "no artifact given; the record states sha256 %s", orNull(r.ArtifactSHA256))
	case r.ArtifactSHA256 == nil:
		v.rep.fail(CheckArtifact, "an artifact was given, but the record has none (outcome %s)", r.Outcome.Status)
	case canon.Digest(artifact) != *r.ArtifactSHA256:
		v.rep.fail(CheckArtifact, "the artifact hashes to %s, the record states %s", canon.Digest(artifact), *r.ArtifactSHA256)
	}
	if artifact != nil && !v.rep.failedSince(n, CheckArtifact) {
		v.rep.pass(CheckArtifact, "CONSENSUS.md hashes to %s", *r.ArtifactSHA256)
	}
}

func orNull(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

// checkServiceSignature verifies the service's signature over the
// canonical bytes of the record without its signature member, with the
// key the JWKS publishes under its kid.
func (v *verification) checkServiceSignature(keys *jwk.Set) {
	sig := v.rec.Signature
	if keys == nil {
		v.rep.skip(CheckServiceSignature, "no JWKS given: nothing shows the issuer issued this record (give the keys from %s/.well-known/consensus-keys)", v.rec.Issuer)
		return
	}
	pub, ok := keys.Find(sig.Kid)
	if !ok {
		v.rep.fail(CheckServiceSignature, "kid %s is not in the given JWKS", sig.Kid)
		return
	}
	msg, err := withoutSignature(v.canonical)
	if err != nil {
		v.rep.fail(CheckServiceSignature, "cannot read the record: %v", err)
		return
	}
	if jwk.Verify(pub, msg, sig.Value) != nil {
		v.rep.fail(CheckServiceSignature, "the signature does not verify with key %s over the record's canonical bytes", sig.Kid)
		return
	}
	v.rep.pass(CheckServiceSignature, "Ed25519 by key %s", sig.Kid)
}

// withoutSignature returns the canonical bytes of a canonical record without
// its signature member.
func withoutSignature(canonical []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(canonical, &m); err != nil {
		return nil, err
	}
	delete(m, "signature")
	return canon.Marshal(m)
}
