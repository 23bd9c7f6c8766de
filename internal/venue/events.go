package venue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

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
