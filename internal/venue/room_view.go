package venue

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// OutcomeView is the wire form of an outcome.
type OutcomeView struct {
	Status          string  `json:"status"`
	DecidedAt       *string `json:"decidedAt"`
	DecidingEventID *string `json:"decidingEventId"`
	// BlockedBy is set in the room when the outcome is expired: the
	// required participants that were silent.
	BlockedBy []BlockerView `json:"blockedBy,omitempty"`
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
	// Signature is the participant's Ed25519 signature over the canonical
	// room-command/v2 bytes (room-command/v1 for an event stored before
	// version 2), unpadded base64url; null for a participant that bound no
	// key.
	Signature *string `json:"signature"`
	// To is the participants a question or change request asks, absent
	// when it asks the whole room; InReplyTo is the question or change
	// request a comment answers, absent when none.
	To        []string `json:"to,omitempty"`
	InReplyTo *string  `json:"inReplyTo,omitempty"`
	// Evidence, only on an event read from a reply to the invitation
	// email, is the record.Evidence that the invited address sent it.
	Evidence json.RawMessage `json:"evidence,omitempty"`
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
	// Revision is the revision the decision was made on; Stale reports that
	// its terms differ from the current ones, so it does not count.
	Revision *int `json:"revision"`
	Stale    bool `json:"stale"`
}

// RevisionView is the exact locked revision.
type RevisionView struct {
	Number            int             `json:"number"`
	RevisionDigest    string          `json:"revisionDigest"`
	MarkdownDigest    string          `json:"markdownDigest"`
	TermsDigest       string          `json:"termsDigest"`
	CanonicalRevision json.RawMessage `json:"canonicalRevision"`
	Markdown          string          `json:"markdown"`
}

// You is the reading participant's own state. Decision is its decision
// that counts on the current revision: null when it has none or only a
// stale one (its roster entry shows that), so null means "decide".
//
// AwaitingReply lists, in seq order, the questions and change requests
// addressed to the reader (their to names it) that it has not answered
// with a later comment naming them in inReplyTo; empty once the outcome is
// final.
type You struct {
	ParticipantID   string   `json:"participantId"`
	Decision        *string  `json:"decision"`
	EventsRemaining int      `json:"eventsRemaining"`
	AwaitingReply   []string `json:"awaitingReply"`
}

// ArtifactMeta locates CONSENSUS.md once reached.
type ArtifactMeta struct {
	URL    string `json:"url"`
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
}

// RoomView is the room as one participant reads it: the wire form that
// Room writes, field for field in this order, from cached parts. The
// reader's own members come first and the members every reader of the
// version shares last, events at the end, so the HTTP layer writes a
// small head of the reader's own and then the version's shared bytes.
type RoomView struct {
	AgreementID  string                `json:"agreementId"`
	InvitationID string                `json:"invitationId"`
	You          You                   `json:"you"`
	Artifact     *ArtifactMeta         `json:"artifact"`
	ServerTime   string                `json:"serverTime"`
	Outcome      OutcomeView           `json:"outcome"`
	Blocking     []BlockerView         `json:"blocking"`
	DecisionRule RuleView              `json:"decisionRule"`
	ChainHead    string                `json:"chainHead"`
	Deadline     string                `json:"deadline"`
	Revision     RevisionView          `json:"revision"`
	Revisions    []RevisionSummaryView `json:"revisions"`
	Roster       []RosterEntry         `json:"roster"`
	Events       []EventView           `json:"events"`
}

// roomViewFormat names the shape of RoomView in every room tag. Change it
// whenever the bytes Room writes for the same state change, so no client
// keeps a body of the old shape under a matching tag.
const roomViewFormat = "consensus-room-view/7"

// RoomTag is the version of one participant's room: it changes whenever
// the room as that participant reads it changes (serverTime aside), so the
// HTTP layer makes it the room's strong ETag. It is a digest, so it says
// nothing of the room but whether it changed.
type RoomTag [16]byte

// roomTag is one participant's RoomTag: the room is a function of the
// agreement's version (which every change the room shows bumps, in the
// transaction that makes it), of who reads it, and of whether the deadline
// has passed while the stored outcome is pending (the expiry a read shows
// before anything stores it). serverTime is not in it.
func roomTag(agreementID, participantID uuid.UUID, version int64, lapsed bool) RoomTag {
	var b [len(roomViewFormat) + 16 + 16 + 8 + 1]byte
	n := copy(b[:], roomViewFormat)
	n += copy(b[n:], agreementID[:])
	n += copy(b[n:], participantID[:])
	binary.BigEndian.PutUint64(b[n:], uint64(version))
	if lapsed {
		b[n+8] = 1
	}
	sum := sha256.Sum256(b[:])
	return RoomTag(sum[:16])
}

// lapsed reports whether the deadline has passed while the stored outcome
// is pending.
func lapsed(outcomeStatus string, deadline, now time.Time) bool {
	return outcomeStatus == room.StatusPending && !now.Before(deadline)
}

// RoomTag is the tag of p's room as of p's authentication, computed
// without reading anything more: an If-None-Match that matches it is
// answered 304 at the cost of the credential lookup alone.
func (v *Venue) RoomTag(p *Principal) RoomTag {
	return roomTag(p.AgreementID, p.ParticipantID, p.Version, lapsed(p.OutcomeStatus, p.Deadline, v.now()))
}

// UntilDeadline is how long p's room has left before its deadline while
// its outcome is pending, or 0.
func (v *Venue) UntilDeadline(p *Principal) time.Duration {
	if p.OutcomeStatus != room.StatusPending {
		return 0
	}
	return max(0, p.Deadline.Sub(v.now()))
}

func eventView(e store.Event) EventView {
	v := EventView{
		ID: e.ID.String(), Seq: e.Seq, ParticipantID: e.ParticipantID.String(), Action: e.Action, Body: e.Body,
		Revision: e.Revision, CreatedAt: canon.FormatTime(e.CreatedAt), Hash: e.Hash, Prev: e.PrevHash,
		Signature: signatureView(e.Signature), Evidence: evidenceView(e.Evidence), To: e.ToStrings(),
	}
	if e.InReplyTo.Valid {
		v.InReplyTo = ptr(e.InReplyTo.UUID.String())
	}
	return v
}

// evidenceView is stored evidence as the event view shows it: its
// canonical JSON as stored, or nothing.
func evidenceView(evidence string) json.RawMessage {
	if evidence == "" {
		return nil
	}
	return json.RawMessage(evidence)
}

// signatureView is a stored signature as the event view shows it.
func signatureView(sig []byte) *string {
	if sig == nil {
		return nil
	}
	return ptr(jwk.EncodeSignature(sig))
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

// roomRead is one participant's room before encoding: a snapshot and what
// depends on the reader and the clock.
type roomRead struct {
	snap     *roomSnapshot
	settled  room.Outcome // what outcome and blocking show
	outcome  OutcomeView
	blocking []BlockerView
	you      You
	artifact *ArtifactMeta
	now      time.Time
	tag      RoomTag
}

// readRoom reads p's room at p's version or later: only what the cache
// lacks (nothing when another reader already read this version). After the
// deadline it may persist the expired outcome; it never joins or decides
// anything.
func (v *Venue) readRoom(ctx context.Context, p *Principal) (*roomRead, error) {
	now := v.now()
	snap, err := v.rooms().snapshot(ctx, v.Store, p.AgreementID, p.Version)
	if err != nil {
		return nil, err
	}
	a := snap.agreement
	var me store.RosterMember
	for _, m := range snap.roster {
		if m.ID == p.ParticipantID {
			me = m
			break
		}
	}
	outcome, err := settleExpiry(ctx, v.Store, a, snap.outcome(now))
	if err != nil {
		return nil, err
	}
	r := &roomRead{snap: snap, settled: outcome, outcome: outcomeView(outcome), blocking: snap.blocking(outcome), now: now,
		you: You{ParticipantID: p.ParticipantID.String(), EventsRemaining: max(0, room.MaxEventsPerParticipant-me.EventsOn(a.CurrentRevision))},
		tag: roomTag(a.ID, p.ParticipantID, a.Version, lapsed(a.Outcome.Status, a.Deadline, now))}
	if outcome.Status == room.StatusExpired {
		r.outcome.BlockedBy = r.blocking
	}
	r.you.AwaitingReply = room.AwaitingReply(snap.notes, p.ParticipantID.String(), outcome)
	if r.you.AwaitingReply == nil {
		r.you.AwaitingReply = []string{}
	}
	if d, ok := snap.counted[p.ParticipantID]; ok {
		r.you.Decision = ptr(d)
	}
	if outcome.Status == room.StatusReached && snap.artifact != nil {
		r.artifact = &ArtifactMeta{URL: v.actions(p.Kind, p.InvitationID.String()).Artifact, SHA256: snap.artifact.SHA256, Bytes: snap.artifact.Bytes}
	}
	return r, nil
}

// RoomParts is the room as one participant reads it, for the HTTP layer
// to encode: the part every reader of the version shares, encoded once per
// version (see Shared), and the values that depend on the reader and the
// clock.
type RoomParts struct {
	// Tag is the room's version for this reader (see RoomTag).
	Tag          RoomTag
	AgreementID  uuid.UUID
	InvitationID uuid.UUID
	You          You
	Outcome      OutcomeView
	Blocking     []BlockerView
	DecisionRule RuleView
	ChainHead    string
	Deadline     time.Time
	Artifact     *ArtifactMeta
	ServerTime   time.Time
	snap         *roomSnapshot
	cache        *roomCache   // which holds snap, and counts its middle
	outcome      room.Outcome // what Outcome and Blocking show
}

// SharedPieces are the members of the room every reader of one version
// is served alike, in RoomView's order: the outcome and what follows it as
// values, and the revision and what follows it encoded, each the JSON value
// of its RoomView member as every response is written (no HTML escaping);
// Events holds the events' objects joined by commas, without brackets.
type SharedPieces struct {
	Outcome                             OutcomeView
	Blocking                            []BlockerView
	DecisionRule                        RuleView
	ChainHead                           string
	Deadline                            time.Time
	Revision, Revisions, Roster, Events []byte
}

// Shared returns what join makes of the version's shared pieces. join runs
// once per version, on its first full read, and every later reader of the
// version with the same outcome gets the same bytes, which it must not
// modify. A reader who finds another outcome (the deadline passed since)
// has them joined for it alone: the expiry it settled is a new version.
func (r *RoomParts) Shared(join func(SharedPieces) []byte) []byte {
	s := r.snap
	pieces := func() SharedPieces {
		return SharedPieces{Outcome: r.Outcome, Blocking: r.Blocking, DecisionRule: r.DecisionRule, ChainHead: r.ChainHead, Deadline: r.Deadline,
			Revision: s.revision.view, Revisions: s.revision.history, Roster: s.rosterJS, Events: s.events}
	}
	s.middleOnce.Do(func() {
		s.middleOutcome = r.outcome
		s.middle = join(pieces())
		r.cache.charge(s, len(s.middle))
	})
	if r.outcome != s.middleOutcome {
		return join(pieces())
	}
	return s.middle
}

// RoomParts returns the room as p reads it, in parts. See readRoom.
func (v *Venue) RoomParts(ctx context.Context, p *Principal) (*RoomParts, error) {
	r, err := v.readRoom(ctx, p)
	if err != nil {
		return nil, err
	}
	a := r.snap.agreement
	return &RoomParts{Tag: r.tag, AgreementID: a.ID, InvitationID: p.InvitationID, You: r.you, Outcome: r.outcome, Blocking: r.blocking,
		DecisionRule: r.snap.decisionRule, ChainHead: a.Head.Hash, Deadline: a.Deadline, Artifact: r.artifact, ServerTime: r.now, snap: r.snap, cache: v.rooms(), outcome: r.settled}, nil
}

// Room returns the room as p reads it, as a value (what RoomParts holds).
// It decodes the room's cached events, so it costs what the room holds.
func (v *Venue) Room(ctx context.Context, p *Principal) (*RoomView, error) {
	r, err := v.readRoom(ctx, p)
	if err != nil {
		return nil, err
	}
	a, rev := r.snap.agreement, r.snap.revision
	view := &RoomView{
		AgreementID: a.ID.String(), InvitationID: p.InvitationID.String(),
		Revision: RevisionView{Number: rev.Number, RevisionDigest: rev.RevisionDigest, MarkdownDigest: rev.MarkdownDigest,
			TermsDigest: rev.TermsDigest, CanonicalRevision: json.RawMessage(rev.Canonical), Markdown: rev.Markdown},
		Revisions: revisionsView(rev.History[:rev.Number]), Roster: rosterView(r.snap.rule, r.snap.roster), Events: []EventView{},
		You: r.you, Outcome: r.outcome, Blocking: r.blocking, DecisionRule: r.snap.decisionRule,
		ChainHead: a.Head.Hash, Deadline: canon.FormatSeconds(a.Deadline), Artifact: r.artifact, ServerTime: canon.FormatTime(r.now),
	}
	if len(r.snap.events) > 0 {
		events := make([]byte, 0, len(r.snap.events)+2)
		events = append(append(append(events, '['), r.snap.events...), ']')
		if err := json.Unmarshal(events, &view.Events); err != nil {
			return nil, err
		}
	}
	return view, nil
}
