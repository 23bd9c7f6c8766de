package record

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/room"
)

// Input is what the service knows of a finished room, as the store keeps
// it: Build turns it into a record.
// The issuer is the canonical revisions': the record's and the commands'
// schema URLs are built on it.
type Input struct {
	IssuedAt time.Time
	// Revisions holds every locked revision, 1 to n in order; the last is
	// the one in force at the outcome.
	Revisions []LockedRevision
	// Slots holds one entry per participant of the final revision.
	Slots   []Slot
	Events  []StoredEvent
	Outcome room.Outcome
	// ArtifactSHA256 is the hex SHA-256 of CONSENSUS.md, "" when none.
	ArtifactSHA256 string
}

// LockedRevision is a revision as stored: its canonical bytes, Markdown
// and digests.
type LockedRevision struct {
	Number         int
	Canonical      []byte
	Markdown       string
	RevisionDigest string
	MarkdownDigest string
	TermsDigest    string
}

// Slot is what the canonical revision does not say about a participant.
type Slot struct {
	ParticipantID string
	InvitationID  string
	// BindingDigest is "" when the slot was never claimed.
	BindingDigest string
	// PublicKey is nil for a claim without a key.
	PublicKey *jwk.Key
}

// StoredEvent is one event row.
type StoredEvent struct {
	ID            string
	Seq           int64
	ParticipantID string
	Revision      int
	Action        string
	Body          string
	CommandDigest string
	CreatedAt     time.Time
	Prev          string
	Hash          string
	// Signature is the participant's signature (unpadded base64url), "" when none.
	Signature string
	// IdempotencyKey is the key the event was posted under: the command of
	// a signed event stored as room-command/v2 holds it.
	IdempotencyKey string
	// Evidence is the canonical JSON of the event's Evidence, "" when none.
	Evidence string
	// To and InReplyTo are the event's addressing, nil and "" when none.
	To        []string
	InReplyTo string
}

// Build assembles the unsigned record. It refuses what it cannot assemble:
// revisions not numbered 1 to n, an event whose rebuilt command does not
// hash to its stored digest, a broken chain link, an event of a participant
// outside the roster or on a revision the record does not hold, a pending
// outcome. Whether the signed record verifies as a whole (outcome, deadline,
// decisions, artifact) is Verify's to say; the service runs it before it
// stores a record.
func Build(in Input) (Record, error) {
	if len(in.Revisions) == 0 {
		return Record{}, fmt.Errorf("record: no revision")
	}
	revs := make([]room.Revision, len(in.Revisions))
	for i, lr := range in.Revisions {
		if err := json.Unmarshal(lr.Canonical, &revs[i]); err != nil {
			return Record{}, fmt.Errorf("record: canonical revision %d: %w", lr.Number, err)
		}
		if lr.Number != i+1 || revs[i].Revision != lr.Number {
			return Record{}, fmt.Errorf("record: revision %d stored as number %d (canonical %d): want 1 to n in order", i+1, lr.Number, revs[i].Revision)
		}
	}
	rev := revs[len(revs)-1]
	if !in.Outcome.Final() {
		return Record{}, fmt.Errorf("record: the outcome is %s, not final", in.Outcome.Status)
	}
	slots := make(map[string]Slot, len(in.Slots))
	for _, s := range in.Slots {
		slots[s.ParticipantID] = s
	}
	r := Record{
		Schema: fmt.Sprintf(SchemaFmt, rev.Issuer), Version: 1, AgreementID: rev.AgreementID, Issuer: rev.Issuer,
		IssuedAt:     canon.FormatTime(in.IssuedAt),
		Revisions:    make([]Revision, len(in.Revisions)),
		Participants: make([]Participant, 0, len(rev.Participants)), Events: make([]Event, 0, len(in.Events)),
		Outcome:   Outcome{Status: in.Outcome.Status, DecidedAt: canon.FormatTime(in.Outcome.DecidedAt)},
		ChainHead: canon.ZeroHash, EventCount: len(in.Events),
	}
	for i, lr := range in.Revisions {
		r.Revisions[i] = Revision{Number: lr.Number, Canonical: json.RawMessage(lr.Canonical), RevisionDigest: lr.RevisionDigest,
			Markdown: lr.Markdown, MarkdownDigest: lr.MarkdownDigest, TermsDigest: lr.TermsDigest}
	}
	for _, p := range rev.Participants {
		s, ok := slots[p.ParticipantID]
		if !ok {
			return Record{}, fmt.Errorf("record: no slot for participant %s", p.ParticipantID)
		}
		rp := Participant{ParticipantID: p.ParticipantID, DisplayName: p.DisplayName, Kind: p.Kind, Required: p.Required,
			InvitationID: s.InvitationID, PublicKey: s.PublicKey}
		if s.BindingDigest != "" {
			rp.BindingDigest = &s.BindingDigest
		}
		r.Participants = append(r.Participants, rp)
	}
	for _, e := range in.Events {
		ev, err := buildEvent(in, rev, slots, e, r.ChainHead)
		if err != nil {
			return Record{}, err
		}
		r.Events = append(r.Events, ev)
		r.ChainHead = ev.Hash
	}
	if in.Outcome.DecidingEventID != "" {
		r.Outcome.DecidingEventID = &in.Outcome.DecidingEventID
	}
	if in.ArtifactSHA256 != "" {
		r.ArtifactSHA256 = &in.ArtifactSHA256
	}
	return r, nil
}

func buildEvent(in Input, rev room.Revision, slots map[string]Slot, e StoredEvent, prev string) (Event, error) {
	s, ok := slots[e.ParticipantID]
	if !ok {
		return Event{}, fmt.Errorf("record: event %d: participant %s is not on the roster", e.Seq, e.ParticipantID)
	}
	if e.Revision < 1 || e.Revision > len(in.Revisions) {
		return Event{}, fmt.Errorf("record: event %d is on revision %d, the record holds revisions 1 to %d", e.Seq, e.Revision, len(in.Revisions))
	}
	cmd := room.Command{
		AgreementID: rev.AgreementID, InvitationID: s.InvitationID, ParticipantID: e.ParticipantID, Revision: e.Revision,
		RevisionDigest: in.Revisions[e.Revision-1].RevisionDigest, Action: e.Action, Body: e.Body,
		To: e.To, InReplyTo: e.InReplyTo,
	}.Unsigned(rev.Issuer)
	_, d, err := canon.DigestOf(cmd)
	if err == nil && d != e.CommandDigest && e.Signature != "" && e.IdempotencyKey != "" {
		// A signed event stored since room-command/v2.
		cmd = cmd.Signed(rev.Issuer, e.IdempotencyKey)
		_, d, err = canon.DigestOf(cmd)
	}
	if err != nil || d != e.CommandDigest {
		return Event{}, fmt.Errorf("record: event %d: the rebuilt command does not hash to the stored digest (%v)", e.Seq, err)
	}
	ev := Event{ID: e.ID, Seq: e.Seq, Command: cmd, CommandDigest: e.CommandDigest, CreatedAt: canon.FormatTime(e.CreatedAt), Prev: e.Prev, Hash: e.Hash}
	if h, err := EventHash(e.Prev, e.Seq, e.CommandDigest, ev.CreatedAt); err != nil || h != e.Hash || e.Prev != prev {
		return Event{}, fmt.Errorf("record: event %d: the stored chain link does not recompute (%v)", e.Seq, err)
	}
	if e.Signature != "" {
		ev.Signature = &e.Signature
	}
	if e.Evidence != "" {
		if ev.Evidence, err = parseEvidence(e.Evidence); err != nil {
			return Event{}, fmt.Errorf("record: event %d: %w", e.Seq, err)
		}
	}
	return ev, nil
}
