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
	"github.com/consensus-md/consensus/internal/store/dbsqlc"
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

func eventView(e dbsqlc.Event) EventView {
	return EventView{
		ID: e.ID.String(), Seq: e.Seq, ParticipantID: e.ParticipantID.String(), Action: e.Action, Body: e.Body,
		Revision: int(e.Revision), CreatedAt: canon.FormatTime(e.CreatedAt), Hash: e.Hash, Prev: e.PrevHash,
	}
}

func domainEvent(e dbsqlc.Event) room.Event {
	return room.Event{ID: e.ID.String(), Seq: e.Seq, ParticipantID: e.ParticipantID.String(), Revision: int(e.Revision), Action: e.Action, CreatedAt: e.CreatedAt}
}

func domainEvents(events []dbsqlc.Event) []room.Event {
	out := make([]room.Event, len(events))
	for i, e := range events {
		out[i] = domainEvent(e)
	}
	return out
}

func domainRoster(ps []dbsqlc.Participant) []room.Member {
	out := make([]room.Member, len(ps))
	for i, p := range ps {
		out[i] = room.Member{ID: p.ID.String(), Required: p.Required}
	}
	return out
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

func storedOutcome(a dbsqlc.Agreement) room.Outcome {
	o := room.Outcome{Status: a.OutcomeStatus}
	if a.OutcomeDecidedAt != nil {
		o.DecidedAt = *a.OutcomeDecidedAt
	}
	if a.OutcomeEventID.Valid {
		o.DecidingEventID = a.OutcomeEventID.UUID.String()
	}
	return o
}

// settleExpiry persists expired when the deadline passed while pending, and
// returns the outcome in force. Only a pending outcome is ever updated.
func settleExpiry(ctx context.Context, q *dbsqlc.Queries, a dbsqlc.Agreement, evaluated room.Outcome) (room.Outcome, error) {
	stored := storedOutcome(a)
	if stored.Final() || evaluated.Status != room.StatusExpired {
		return stored, nil
	}
	if _, err := q.AgreementSetOutcome(ctx, dbsqlc.AgreementSetOutcomeParams{ID: a.ID, OutcomeStatus: room.StatusExpired, OutcomeDecidedAt: &evaluated.DecidedAt}); err != nil {
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
		return nil, store.Interpret(err)
	}
	rev, err := v.Store.RevisionGet(ctx, dbsqlc.RevisionGetParams{AgreementID: a.ID, Number: a.CurrentRevision})
	if err != nil {
		return nil, store.Interpret(err)
	}
	parts, err := v.Store.ParticipantListByAgreement(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	events, err := v.Store.EventListByAgreement(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	devents := domainEvents(events)
	outcome, err := settleExpiry(ctx, v.Store.Queries, a, room.Evaluate(int(a.CurrentRevision), domainRoster(parts), devents, a.Deadline, now))
	if err != nil {
		return nil, err
	}
	decisions := room.Decisions(int(a.CurrentRevision), devents)
	view := &RoomView{
		AgreementID: a.ID.String(), InvitationID: p.InvitationID.String(),
		Revision: RevisionView{Number: int(rev.Number), RevisionDigest: rev.RevisionDigest, MarkdownDigest: rev.MarkdownDigest,
			CanonicalRevision: json.RawMessage(rev.CanonicalJson), Markdown: rev.Markdown},
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
			return nil, store.Interpret(err)
		}
		view.Artifact = &ArtifactMeta{URL: v.actions(p.InvitationID.String()).Artifact, SHA256: art.Sha256, Bytes: len(art.Body)}
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
		a, err := tx.AgreementGetForUpdate(ctx, p.AgreementID)
		if err != nil {
			return err
		}
		prior, err := tx.EventGetByKey(ctx, dbsqlc.EventGetByKeyParams{ParticipantID: p.ParticipantID, IdempotencyKey: key})
		switch {
		case err == nil:
			if prior.CommandDigest != cmdDigest {
				refusal = room.ErrIdempotencyKeyReused
				return nil
			}
			posted = &Posted{Event: eventView(prior), Outcome: outcomeView(storedOutcome(a))}
			return nil
		case !errors.Is(store.Interpret(err), room.ErrNotFound):
			return err
		}
		rev, err := tx.RevisionGet(ctx, dbsqlc.RevisionGetParams{AgreementID: a.ID, Number: a.CurrentRevision})
		if err != nil {
			return err
		}
		parts, err := tx.ParticipantListByAgreement(ctx, a.ID)
		if err != nil {
			return err
		}
		terminal, err := tx.EventListTerminal(ctx, dbsqlc.EventListTerminalParams{AgreementID: a.ID, Revision: a.CurrentRevision})
		if err != nil {
			return err
		}
		count, err := tx.EventCountByParticipant(ctx, dbsqlc.EventCountByParticipantParams{ParticipantID: p.ParticipantID, Revision: a.CurrentRevision})
		if err != nil {
			return err
		}
		snap := room.Snapshot{Revision: int(a.CurrentRevision), RevisionDigest: rev.RevisionDigest, Deadline: a.Deadline,
			Roster: domainRoster(parts), Events: domainEvents(terminal), ParticipantEvents: int(count)}
		outcome, admitErr := room.Admit(snap, cmd, now)
		if _, err := settleExpiry(ctx, tx.Queries, a, outcome); err != nil {
			return err
		}
		if admitErr != nil {
			refusal = admitErr
			return nil // commit: an expiry found here is persisted
		}
		head, err := tx.EventChainHead(ctx, a.ID)
		if err != nil && !errors.Is(store.Interpret(err), room.ErrNotFound) {
			return err
		}
		prev := canon.ZeroHash
		if err == nil {
			prev = head.Hash
		}
		e := dbsqlc.Event{
			ID: uuid.New(), AgreementID: a.ID, Seq: head.Seq + 1, ParticipantID: p.ParticipantID, Revision: a.CurrentRevision,
			Action: cmd.Action, Body: cmd.Body, IdempotencyKey: key, CommandDigest: cmdDigest, CreatedAt: now, PrevHash: prev,
		}
		if e.Hash, err = chainHash(e); err != nil {
			return err
		}
		if err := tx.EventInsert(ctx, dbsqlc.EventInsertParams(e)); err != nil {
			return err
		}
		final := storedOutcome(a)
		if room.IsTerminal(cmd.Action) {
			if err := tx.ParticipantSetDecided(ctx, p.ParticipantID); err != nil {
				return err
			}
			snap.Events = append(snap.Events, domainEvent(e))
			if final, err = v.finalize(ctx, tx, a, rev, snap, e, now); err != nil {
				return err
			}
		}
		posted, created = &Posted{Event: eventView(e), Outcome: outcomeView(final)}, true
		return nil
	})
	if err != nil {
		return nil, false, store.Interpret(err)
	}
	if refusal != nil {
		return nil, false, refusal
	}
	return posted, created, nil
}

// chainHash is sha256(JCS({prev, seq, command_digest, created_at})).
func chainHash(e dbsqlc.Event) (string, error) {
	_, d, err := canon.DigestOf(map[string]any{
		"prev": e.PrevHash, "seq": e.Seq, "command_digest": e.CommandDigest, "created_at": canon.FormatTime(e.CreatedAt),
	})
	return d, err
}

// finalize evaluates the rule after a terminal event and persists a final
// outcome; a reached outcome also stores CONSENSUS.md.
func (v *Venue) finalize(ctx context.Context, tx *store.Tx, a dbsqlc.Agreement, rev dbsqlc.Revision, snap room.Snapshot, last dbsqlc.Event, now time.Time) (room.Outcome, error) {
	outcome := room.Evaluate(snap.Revision, snap.Roster, snap.Events, snap.Deadline, now)
	if !outcome.Final() {
		return outcome, nil
	}
	eventID, err := uuid.Parse(outcome.DecidingEventID)
	if err != nil {
		return outcome, err
	}
	if _, err := tx.AgreementSetOutcome(ctx, dbsqlc.AgreementSetOutcomeParams{
		ID: a.ID, OutcomeStatus: outcome.Status, OutcomeDecidedAt: &outcome.DecidedAt, OutcomeEventID: uuid.NullUUID{UUID: eventID, Valid: true},
	}); err != nil {
		return outcome, err
	}
	if outcome.Status != room.StatusReached {
		return outcome, nil
	}
	var revision room.Revision
	if err := json.Unmarshal([]byte(rev.CanonicalJson), &revision); err != nil {
		return outcome, err
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
	return outcome, tx.ArtifactInsert(ctx, dbsqlc.ArtifactInsertParams{
		AgreementID: a.ID, Revision: a.CurrentRevision, Body: []byte(md), Sha256: canon.Digest([]byte(md)), FinalizedAt: now,
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
		if errors.Is(store.Interpret(err), room.ErrNotFound) {
			return nil, ErrArtifactNotReady
		}
		return nil, err
	}
	return &Artifact{Body: art.Body, SHA256: art.Sha256, AgreementID: art.AgreementID.String(), Revision: int(art.Revision), FinalizedAt: canon.FormatTime(art.FinalizedAt)}, nil
}
