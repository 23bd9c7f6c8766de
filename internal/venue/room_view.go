package venue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// OutcomeView is the wire form of an outcome.
type OutcomeView struct {
	Status          string  `json:"status"`
	DecidedAt       *string `json:"decidedAt"`
	DecidingEventID *string `json:"decidingEventId"`
}

// EventView is the wire form of a stored event.
type EventView struct {
	ID            string `json:"id"`
	Seq           int64  `json:"seq"`
	ParticipantID string `json:"participantId"`
	Action        string `json:"action"`
	Body          string `json:"body"`
	Revision      int    `json:"revision"`
	CreatedAt     string `json:"createdAt"`
	Hash          string `json:"hash"`
	Prev          string `json:"prev"`
}

// RosterEntry is one participant as the room shows it.
type RosterEntry struct {
	ParticipantID string  `json:"participantId"`
	DisplayName   string  `json:"displayName"`
	Kind          string  `json:"kind"`
	Required      bool    `json:"required"`
	State         string  `json:"state"`
	Decision      *string `json:"decision"`
	DecidedAt     *string `json:"decidedAt"`
}

// RevisionView is the exact locked revision.
type RevisionView struct {
	Number            int             `json:"number"`
	RevisionDigest    string          `json:"revisionDigest"`
	MarkdownDigest    string          `json:"markdownDigest"`
	CanonicalRevision json.RawMessage `json:"canonicalRevision"`
	Markdown          string          `json:"markdown"`
}

// You is the reading participant's own state.
type You struct {
	ParticipantID   string  `json:"participantId"`
	Decision        *string `json:"decision"`
	EventsRemaining int     `json:"eventsRemaining"`
}

// ArtifactMeta locates CONSENSUS.md once reached.
type ArtifactMeta struct {
	URL    string `json:"url"`
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
}

// RoomView is the room as one participant reads it.
type RoomView struct {
	AgreementID  string        `json:"agreementId"`
	InvitationID string        `json:"invitationId"`
	Revision     RevisionView  `json:"revision"`
	Roster       []RosterEntry `json:"roster"`
	Events       []EventView   `json:"events"`
	You          You           `json:"you"`
	Outcome      OutcomeView   `json:"outcome"`
	ChainHead    string        `json:"chainHead"`
	Deadline     string        `json:"deadline"`
	Artifact     *ArtifactMeta `json:"artifact"`
	ServerTime   string        `json:"serverTime"`
}

// ETag is a strong validator over everything but serverTime.
func (r *RoomView) ETag() (string, error) {
	c := *r
	c.ServerTime = ""
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:16]) + `"`, nil
}

func eventView(e store.Event) EventView {
	return EventView{
		ID: e.ID.String(), Seq: e.Seq, ParticipantID: e.ParticipantID.String(), Action: e.Action, Body: e.Body,
		Revision: e.Revision, CreatedAt: canon.FormatTime(e.CreatedAt), Hash: e.Hash, Prev: e.PrevHash,
	}
}

func outcomeView(o room.Outcome) OutcomeView {
	v := OutcomeView{Status: o.Status}
	if o.Final() {
		v.DecidedAt = ptr(canon.FormatTime(o.DecidedAt))
	}
	if o.DecidingEventID != "" {
		v.DecidingEventID = ptr(o.DecidingEventID)
	}
	return v
}

// roomEvents is the chain as the decision rule sees it.
func roomEvents(events []store.Event) []room.Event {
	out := make([]room.Event, len(events))
	for i, e := range events {
		out[i] = e.RoomEvent()
	}
	return out
}

// members is the roster as the decision rule sees it.
func members(ps []store.Participant) []room.Member {
	out := make([]room.Member, len(ps))
	for i, p := range ps {
		out[i] = p.Member()
	}
	return out
}

// outcomeSetter is what settleExpiry writes through: the store outside a
// transaction (reading the room), a transaction inside one (posting).
type outcomeSetter interface {
	AgreementSetOutcome(ctx context.Context, id uuid.UUID, o room.Outcome) (bool, error)
}

// settleExpiry persists expired when the deadline passed while pending, and
// returns the outcome in force. Only a pending outcome is ever updated.
func settleExpiry(ctx context.Context, s outcomeSetter, a store.Agreement, evaluated room.Outcome) (room.Outcome, error) {
	if a.Outcome.Final() || evaluated.Status != room.StatusExpired {
		return a.Outcome, nil
	}
	if _, err := s.AgreementSetOutcome(ctx, a.ID, room.Outcome{Status: room.StatusExpired, DecidedAt: evaluated.DecidedAt}); err != nil {
		return room.Outcome{}, err
	}
	return evaluated, nil
}

// Room returns the room as p reads it. After the deadline it may persist the
// expired outcome; it never joins or decides anything.
func (v *Venue) Room(ctx context.Context, p *Principal) (*RoomView, error) {
	now := v.now()
	a, err := v.Store.AgreementGet(ctx, p.AgreementID)
	if err != nil {
		return nil, err
	}
	rev, err := v.Store.RevisionGet(ctx, a.ID, a.CurrentRevision)
	if err != nil {
		return nil, err
	}
	parts, err := v.Store.ParticipantListByAgreement(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	events, err := v.Store.EventListByAgreement(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	devents := roomEvents(events)
	outcome, err := settleExpiry(ctx, v.Store, a, room.Evaluate(a.CurrentRevision, members(parts), devents, a.Deadline, now))
	if err != nil {
		return nil, err
	}
	decisions := room.Decisions(a.CurrentRevision, devents)
	view := &RoomView{
		AgreementID: a.ID.String(), InvitationID: p.InvitationID.String(),
		Revision: RevisionView{Number: rev.Number, RevisionDigest: rev.RevisionDigest, MarkdownDigest: rev.MarkdownDigest,
			CanonicalRevision: json.RawMessage(rev.Canonical), Markdown: rev.Markdown},
		Roster: make([]RosterEntry, 0, len(parts)), Events: make([]EventView, 0, len(events)),
		Outcome: outcomeView(outcome), ChainHead: canon.ZeroHash, Deadline: canon.FormatSeconds(a.Deadline),
		ServerTime: canon.FormatTime(now),
	}
	mine := 0
	for _, e := range events {
		view.Events = append(view.Events, eventView(e))
		view.ChainHead = e.Hash
		if e.ParticipantID == p.ParticipantID && e.Revision == a.CurrentRevision {
			mine++
		}
	}
	for _, pt := range parts {
		entry := RosterEntry{ParticipantID: pt.ID.String(), DisplayName: pt.DisplayName, Kind: pt.Kind, Required: pt.Required, State: pt.State}
		if d, ok := decisions[pt.ID.String()]; ok {
			entry.Decision, entry.DecidedAt = ptr(d.Action), ptr(canon.FormatTime(d.CreatedAt))
		}
		view.Roster = append(view.Roster, entry)
	}
	view.You = You{ParticipantID: p.ParticipantID.String(), EventsRemaining: max(0, room.MaxEventsPerParticipant-mine)}
	if d, ok := decisions[p.ParticipantID.String()]; ok {
		view.You.Decision = ptr(d.Action)
	}
	if outcome.Status == room.StatusReached {
		art, err := v.Store.ArtifactGet(ctx, a.ID)
		if err != nil {
			return nil, err
		}
		view.Artifact = &ArtifactMeta{URL: v.actions(p.InvitationID.String()).Artifact, SHA256: art.SHA256, Bytes: len(art.Body)}
	}
	return view, nil
}
