package room

import (
	"fmt"
	"time"
)

// Command limits.
const (
	MaxBody                 = 4000
	MaxEventsPerParticipant = 100
	RoomCommandSchemaFmt    = "%s/schemas/room-command/v1"
	// RoomCommandV2SchemaFmt names the command a keyed participant signs:
	// version 1 plus the Idempotency-Key it is posted under, so that a
	// signature speaks for one event and no other.
	RoomCommandV2SchemaFmt = "%s/schemas/room-command/v2"
)

// IdempotencyKeyPattern is the syntax every Idempotency-Key must match.
const IdempotencyKeyPattern = `^[A-Za-z0-9._:-]{8,128}$`

// ValidIdempotencyKey reports whether k matches IdempotencyKeyPattern. It
// reads the bytes itself: every append checks its key, and the regexp
// engine cost about 13 us of the append's CPU (make bench profile).
func ValidIdempotencyKey(k string) bool {
	if len(k) < 8 || len(k) > 128 {
		return false
	}
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// ValidateCommand checks the action and its body: advisory actions carry 1 to
// 4,000 Unicode code points, terminal ones an empty body.
func ValidateCommand(action, body string) error {
	switch {
	case IsAdvisory(action):
		return ValidateText("body", body, 1, MaxBody)
	case IsTerminal(action):
		if body != "" {
			return invalid("body", "must be empty for the terminal action %q; post rationale as a separate comment", action)
		}
		return nil
	default:
		return invalid("action", "must be one of comment, question, change_request, agree, disagree, abstain")
	}
}

// Command is the normalized room-command object hashed into the command
// digest that idempotency compares. Version 1 is every unsigned event's;
// version 2 (Signed) is what a keyed participant signs and what its event
// stores, the same fields plus idempotency_key.
type Command struct {
	Schema         string `json:"schema"`
	Version        int    `json:"version"`
	AgreementID    string `json:"agreement_id"`
	InvitationID   string `json:"invitation_id"`
	ParticipantID  string `json:"participant_id"`
	Revision       int    `json:"revision"`
	RevisionDigest string `json:"revision_digest"`
	Action         string `json:"action"`
	Body           string `json:"body"`
	// To and InReplyTo are present only when the event carries them (see
	// ValidateAddressing), so a command without them hashes and signs as
	// before they existed.
	To        []string `json:"to,omitempty"`
	InReplyTo string   `json:"in_reply_to,omitempty"`
	// IdempotencyKey is the key the command is posted under: set in
	// version 2 only, absent from version 1's bytes.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// Signed returns c as the room-command/v2 object a keyed participant signs
// when it posts c under the Idempotency-Key key: schema v2, version 2, and
// idempotency_key. Every signer and verifier builds the signed object here.
func (c Command) Signed(origin, key string) Command {
	c.Schema, c.Version, c.IdempotencyKey = fmt.Sprintf(RoomCommandV2SchemaFmt, origin), 2, key
	return c
}

// Unsigned returns c as the room-command/v1 object: schema v1, version 1,
// no idempotency_key.
func (c Command) Unsigned(origin string) Command {
	c.Schema, c.Version, c.IdempotencyKey = fmt.Sprintf(RoomCommandSchemaFmt, origin), 1, ""
	return c
}

// Snapshot is what Admit needs to know about the room at the moment a command
// arrives, read under the agreement's lock.
type Snapshot struct {
	Revision       int
	RevisionDigest string
	// Terms maps each locked revision's number to its terms digest (see
	// History); nil counts only decisions made on Revision.
	Terms    map[int]string
	Deadline time.Time
	Roster   []Member
	// Events holds at least each participant's decision that counts on the
	// current revision (or, without one, its latest decision).
	Events []Event
	// ParticipantEvents is how many events the commanding participant stored on the current revision.
	ParticipantEvents int
	// Stored is the outcome stored with the room, nil when not given. Once
	// final it is the room's outcome, whatever the snapshot's roster and
	// events say: it is set exactly once, by the decision that reached it
	// (or the expiry), so a snapshot read without the roster (a comment,
	// which cannot decide) still sees a closed room.
	Stored *Outcome
	// Rule is the current revision's decision rule.
	Rule Rule
}

// History is the snapshot as the decision rule reads it.
func (s Snapshot) History() History {
	return History{Current: s.Revision, Terms: s.Terms, Roster: s.Roster, Events: s.Events, Deadline: s.Deadline, Rule: s.Rule}
}

// Admit decides whether participant may post cmd now, checking in the order
// the contract fixes: revision, room closed, already decided, event limit.
// It returns the outcome as of now (which the caller persists when it became
// final by expiry) and *RevisionMismatchError (which matches
// ErrRevisionMismatch), ErrRoomClosed, ErrAlreadyDecided or ErrEventLimit.
// A participant whose only decision is stale (made on a revision with other
// terms) may decide again.
func Admit(s Snapshot, cmd Command, now time.Time) (Outcome, error) {
	h := s.History()
	out := h.Outcome(now)
	if s.Stored != nil && s.Stored.Final() {
		out = *s.Stored
	}
	if cmd.Revision != s.Revision || cmd.RevisionDigest != s.RevisionDigest {
		return out, &RevisionMismatchError{Revision: s.Revision, Digest: s.RevisionDigest}
	}
	if out.Final() {
		return out, ErrRoomClosed
	}
	if IsTerminal(cmd.Action) {
		if st, decided := h.Standings()[cmd.ParticipantID]; decided && !st.Stale {
			return out, ErrAlreadyDecided
		}
	}
	if s.ParticipantEvents >= MaxEventsPerParticipant {
		return out, ErrEventLimit
	}
	return out, nil
}
