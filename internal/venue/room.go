package venue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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
		Outcome: outcomeView(outcome), ChainHead: canon.ZeroHash, Deadline: canon.FormatTime(a.Deadline),
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

// EventInput is the events request body as sent; pointers tell a missing
// field from an empty one.
type EventInput struct {
	Action   *string `json:"action"`
	Body     *string `json:"body"`
	Revision *int    `json:"revision"`
	Digest   *string `json:"digest"`
}

// command checks the key and the body's syntax and returns the normalized
// room-command/v1 object. Errors are *room.ValidationError.
func (v *Venue) command(p *Principal, key string, in EventInput) (room.Command, error) {
	if !room.ValidIdempotencyKey(key) {
		return room.Command{}, &room.ValidationError{Field: "Idempotency-Key", Reason: "header is required and must match " + room.IdempotencyKeyPattern}
	}
	switch {
	case in.Action == nil:
		return room.Command{}, &room.ValidationError{Field: "action", Reason: "is required"}
	case in.Revision == nil || *in.Revision < 1:
		return room.Command{}, &room.ValidationError{Field: "revision", Reason: "is required: the current revision number"}
	case in.Digest == nil:
		return room.Command{}, &room.ValidationError{Field: "digest", Reason: "is required: the current revision digest"}
	}
	body := ""
	if in.Body != nil {
		body = *in.Body // a terminal action may omit it
	}
	if err := room.ValidateCommand(*in.Action, body); err != nil {
		return room.Command{}, err
	}
	digest, err := canon.ParseDigest(*in.Digest)
	if err != nil {
		return room.Command{}, &room.ValidationError{Field: "digest", Reason: err.Error()}
	}
	return room.Command{
		Schema: fmt.Sprintf(room.RoomCommandSchemaFmt, v.Origin), Version: 1, AgreementID: p.AgreementID.String(),
		InvitationID: p.InvitationID.String(), ParticipantID: p.ParticipantID.String(), Revision: *in.Revision,
		RevisionDigest: digest, Action: *in.Action, Body: body,
	}, nil
}

// Posted is the result of posting (or replaying) an event.
type Posted struct {
	Event   EventView   `json:"event"`
	Outcome OutcomeView `json:"outcome"`
}

// PostEvent stores one event under the agreement's row lock, in the order
// the contract fixes: key and body syntax (*room.ValidationError); then
// idempotent replay (created false) or room.ErrIdempotencyKeyReused; then
// room.ErrRevisionMismatch, room.ErrRoomClosed, room.ErrAlreadyDecided,
// room.ErrEventLimit. A terminal decision that completes the rule finalizes
// the outcome and, when reached, stores CONSENSUS.md in the same transaction.
func (v *Venue) PostEvent(ctx context.Context, p *Principal, key string, in EventInput) (posted *Posted, created bool, err error) {
	cmd, err := v.command(p, key, in)
	if err != nil {
		return nil, false, err
	}
	_, cmdDigest, err := canon.DigestOf(cmd)
	if err != nil {
		return nil, false, err
	}
	var refusal error
	err = v.Store.InTx(ctx, func(tx *store.Tx) error {
		refusal, posted, created = nil, nil, false
		now := canon.Now(v.now())
		a, err := tx.AgreementLock(ctx, p.AgreementID)
		if err != nil {
			return err
		}
		prior, err := tx.EventGetByKey(ctx, p.ParticipantID, key)
		switch {
		case err == nil:
			if prior.CommandDigest != cmdDigest {
				refusal = room.ErrIdempotencyKeyReused
				return nil
			}
			posted = &Posted{Event: eventView(prior), Outcome: outcomeView(a.Outcome)}
			return nil
		case !errors.Is(err, room.ErrNotFound):
			return err
		}
		st, err := tx.EventAppendState(ctx, a, p.ParticipantID)
		if err != nil {
			return err
		}
		snap := room.Snapshot{Revision: a.CurrentRevision, RevisionDigest: st.Revision.RevisionDigest, Deadline: a.Deadline,
			Roster: members(st.Roster), Events: roomEvents(st.Terminal), ParticipantEvents: st.ParticipantEvents}
		outcome, admitErr := room.Admit(snap, cmd, now)
		if _, err := settleExpiry(ctx, tx, a, outcome); err != nil {
			return err
		}
		if admitErr != nil {
			refusal = admitErr
			return nil // commit: an expiry found here is persisted
		}
		e := store.Event{
			ID: uuid.New(), AgreementID: a.ID, Seq: st.Head.Seq + 1, ParticipantID: p.ParticipantID, Revision: a.CurrentRevision,
			Action: cmd.Action, Body: cmd.Body, IdempotencyKey: key, CommandDigest: cmdDigest, CreatedAt: now, PrevHash: st.Head.Hash,
		}
		if e.Hash, err = chainHash(e); err != nil {
			return err
		}
		if err := tx.EventInsert(ctx, e); err != nil {
			return err
		}
		final := a.Outcome
		if room.IsTerminal(cmd.Action) {
			if err := tx.ParticipantSetDecided(ctx, p.ParticipantID); err != nil {
				return err
			}
			snap.Events = append(snap.Events, e.RoomEvent())
			if final, err = v.finalize(ctx, tx, a, st.Revision, snap, e, now); err != nil {
				return err
			}
		}
		posted, created = &Posted{Event: eventView(e), Outcome: outcomeView(final)}, true
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if refusal != nil {
		return nil, false, refusal
	}
	return posted, created, nil
}

// chainHash is sha256(JCS({prev, seq, command_digest, created_at})).
func chainHash(e store.Event) (string, error) {
	_, d, err := canon.DigestOf(map[string]any{
		"prev": e.PrevHash, "seq": e.Seq, "command_digest": e.CommandDigest, "created_at": canon.FormatTime(e.CreatedAt),
	})
	return d, err
}

// finalize evaluates the rule after a terminal event and persists a final
// outcome; a reached outcome also stores CONSENSUS.md.
func (v *Venue) finalize(ctx context.Context, tx *store.Tx, a store.Agreement, rev store.Revision, snap room.Snapshot, last store.Event, now time.Time) (room.Outcome, error) {
	outcome := room.Evaluate(snap.Revision, snap.Roster, snap.Events, snap.Deadline, now)
	if !outcome.Final() {
		return outcome, nil
	}
	if _, err := tx.AgreementSetOutcome(ctx, a.ID, outcome); err != nil {
		return outcome, err
	}
	if outcome.Status != room.StatusReached {
		return outcome, nil
	}
	md, err := renderArtifact(rev, snap, last, outcome, now)
	if err != nil {
		return outcome, err
	}
	return outcome, tx.ArtifactInsert(ctx, store.Artifact{
		AgreementID: a.ID, Revision: a.CurrentRevision, Body: md, SHA256: canon.Digest(md), FinalizedAt: now,
	})
}

// Artifact is CONSENSUS.md with what its headers state.
type Artifact struct {
	Body        []byte
	SHA256      string
	AgreementID string
	Revision    int
	FinalizedAt string
}

// Artifact returns the stored CONSENSUS.md, or ErrArtifactNotReady unless
// the outcome is reached.
func (v *Venue) Artifact(ctx context.Context, p *Principal) (*Artifact, error) {
	art, err := v.Store.ArtifactGet(ctx, p.AgreementID)
	if err != nil {
		if errors.Is(err, room.ErrNotFound) {
			return nil, ErrArtifactNotReady
		}
		return nil, err
	}
	return &Artifact{Body: art.Body, SHA256: art.SHA256, AgreementID: art.AgreementID.String(), Revision: art.Revision, FinalizedAt: canon.FormatTime(art.FinalizedAt)}, nil
}

// renderArtifact writes CONSENSUS.md for a reached outcome: the locked
// revision, each participant's decision and the chain up to last, the event
// that completed the rule.
func renderArtifact(rev store.Revision, snap room.Snapshot, last store.Event, outcome room.Outcome, now time.Time) ([]byte, error) {
	var revision room.Revision
	if err := json.Unmarshal(rev.Canonical, &revision); err != nil {
		return nil, err
	}
	decisions := room.Decisions(snap.Revision, snap.Events)
	entries := make([]room.ArtifactEntry, len(revision.Participants))
	for i, rp := range revision.Participants {
		entries[i] = room.ArtifactEntry{Participant: rp}
		if d, ok := decisions[rp.ParticipantID]; ok {
			entries[i].Decision, entries[i].EventID, entries[i].DecidedAt = d.Action, d.ID, canon.FormatTime(d.CreatedAt)
		}
	}
	md := room.RenderArtifact(room.ArtifactInput{
		Locked: room.Locked{Revision: revision, Markdown: rev.Markdown, RevisionDigest: rev.RevisionDigest, MarkdownDigest: rev.MarkdownDigest},
		Roster: entries, ChainHead: last.Hash, ChainLength: last.Seq, FinalizedAt: canon.FormatTime(now), DecidingID: outcome.DecidingEventID,
	})
	return []byte(md), nil
}
