package venue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/mail"
	"github.com/consensus-md/consensus/internal/record"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
)

// invitationBody is the invitation email's body; with a reply address it
// says how to decide by replying.
func (v *Venue) invitationBody(env envelope.Envelope) (string, error) {
	if v.ReplyAddress != "" {
		return mail.InvitationBodyWithReply(env)
	}
	return mail.InvitationBody(env)
}

// ReplyInvitee is the address an invitation was sent to, which a reply
// must come from; room.ErrNotFound for an unknown invitation.
func (v *Venue) ReplyInvitee(ctx context.Context, invitationID uuid.UUID) (string, error) {
	inv, err := v.Store.InvitationGet(ctx, invitationID)
	if err != nil {
		return "", err
	}
	return inv.Email, nil
}

// ReplySeen reports whether a reply with messageID was acted on already.
func (v *Venue) ReplySeen(ctx context.Context, messageID string) (bool, error) {
	return v.Store.ReplySeen(ctx, messageID)
}

// ReplyInput is one authenticated reply: its invitation (from the tag of
// the address it was sent to), what its new text says, and the evidence
// that the invited address sent it.
type ReplyInput struct {
	InvitationID uuid.UUID
	MessageID    string
	// Action is agree, disagree, abstain or comment; Digest (a decision's)
	// is the revision digest or its first 12 characters, lower case; Body
	// is a comment's text. Refusal, when set, refuses the reply with that
	// reason before anything else (a message too large, an empty text).
	Action, Digest, Body string
	Refusal              string
	// Evidence is nil only with a Refusal.
	Evidence  *record.Evidence
	RawSHA256 string
}

// ReplyResult says what a reply did. Acted is false for a reply ignored
// (seen before, a revoked participant): it gets no answer.
type ReplyResult struct {
	Acted    bool
	Recorded bool
	Reason   string
	EventID  string
}

// Reply acts on one reply email: it claims an unclaimed slot for the
// invited address (assurance recipient-dkim-reply), posts the event
// through the same append as the events route (every rule of the room
// holds, under the agreement's lock) with the evidence attached, and
// queues exactly one answer to the invited address in the transaction
// that records the reply. A reply refused (deadline passed, an old or
// unknown digest, a slot bound to a key, any refusal of the room) records
// no event but its refusal and the answer. A Message-ID seen before and a
// revoked participant's reply are ignored.
func (v *Venue) Reply(ctx context.Context, in ReplyInput) (ReplyResult, error) {
	if seen, err := v.Store.ReplySeen(ctx, in.MessageID); err != nil || seen {
		return ReplyResult{}, err
	}
	inv, err := v.Store.InvitationGet(ctx, in.InvitationID)
	if err != nil {
		return ReplyResult{}, err
	}
	if inv.RevokedAt != nil {
		return ReplyResult{}, nil
	}
	rev, err := v.rooms().lockedRevision(ctx, v.Store, inv.AgreementID, inv.CurrentRevision)
	if err != nil {
		return ReplyResult{}, err
	}
	refuse := func(reason string) (ReplyResult, error) {
		return v.refuseReply(ctx, in, inv, rev, reason)
	}
	now := canon.Now(v.now())
	switch {
	case in.Refusal != "":
		return refuse(in.Refusal)
	case in.Evidence == nil:
		return ReplyResult{}, errors.New("venue: reply: no evidence")
	case !now.Before(inv.ExpiresAt) || !now.Before(inv.Deadline):
		return refuse("the deadline has passed.")
	}
	if room.IsTerminal(in.Action) && !strings.HasPrefix(rev.RevisionDigest, in.Digest) {
		return refuse(v.staleDigest(ctx, inv.AgreementID, in.Digest, rev))
	}
	token, refusal, err := v.replyClaim(ctx, inv, now)
	switch {
	case errors.Is(err, room.ErrNotFound):
		return ReplyResult{}, nil // revoked meanwhile
	case err != nil:
		return ReplyResult{}, err
	case refusal != "":
		return refuse(refusal)
	}
	evidence, err := canon.Marshal(in.Evidence)
	if err != nil {
		return ReplyResult{}, err
	}
	key := replyKey(in.MessageID)
	number, digest := rev.Number, rev.RevisionDigest
	body := in.Body
	if room.IsTerminal(in.Action) {
		body = ""
	}
	action := in.Action
	result := ReplyResult{Acted: true, Recorded: true}
	also := &eventAlso{evidence: string(evidence), write: func(e store.Event) *store.ReplyWrite {
		result.EventID = e.ID.String()
		w := v.replyWrite(in, inv, rev, "", now)
		w.Reply.EventID = uuid.NullUUID{UUID: e.ID, Valid: true}
		return &w
	}}
	c := ParticipantCredential{kind: inv.Kind, invitationID: inv.ID, tokenHash: secret.Hash(token)}
	_, created, err := v.postEvent(ctx, c, key, nil, EventInput{Action: &action, Body: &body, Revision: &number, Digest: &digest}, also)
	switch {
	case errors.Is(err, room.ErrConflict) || errors.Is(err, ErrUnauthorized):
		// The same reply, acted on meanwhile by another reader; or the
		// participant was revoked under the lock: nothing is recorded.
		return ReplyResult{}, nil
	case err != nil && refusable(err):
		return refuse(reasonOf(err))
	case err != nil:
		return ReplyResult{}, err
	case !created:
		return ReplyResult{}, nil // stored before under the reply's key: acted on already
	}
	return result, nil
}

// eventAlso is what an event read from a reply carries and writes with it.
type eventAlso struct {
	evidence string
	write    func(store.Event) *store.ReplyWrite
}

// replyKey is the idempotency key of a reply's event, from its Message-ID:
// a reply read twice replays the event instead of storing it again.
func replyKey(messageID string) string {
	h := sha256.Sum256([]byte(messageID))
	return "reply:" + hex.EncodeToString(h[:16])
}

// replyClaim returns the participant token of inv's slot, claiming the
// slot for the invited address first if nobody has (room.ErrNotFound once
// the participant is revoked); a slot bound to a key
// cannot be decided by email (its events must be signed), which is the
// refusal returned.
func (v *Venue) replyClaim(ctx context.Context, inv store.InvitationDetail, now time.Time) (token, refusal string, err error) {
	err = v.Store.InTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.AgreementLock(ctx, inv.AgreementID); err != nil {
			return err
		}
		cur, err := tx.InvitationGet(ctx, inv.ID)
		if err != nil {
			return err
		}
		if cur.RevokedAt != nil {
			return room.ErrNotFound
		}
		rev, err := v.rooms().lockedRevision(ctx, tx, cur.AgreementID, cur.CurrentRevision)
		if err != nil {
			return err
		}
		binding := room.Binding{
			Schema: fmt.Sprintf(room.BindingSchemaFmt, v.Origin), Version: 1, AgreementID: cur.AgreementID.String(),
			InvitationID: cur.ID.String(), ParticipantID: cur.ParticipantID.String(), Inbox: cur.Email,
			Assurance: room.AssuranceDKIMReply, Revision: rev.Number, RevisionDigest: rev.RevisionDigest,
		}
		canonical, digest, err := canon.DigestOf(binding)
		if err != nil {
			return err
		}
		token = v.Keys.ParticipantToken(digest)
		claimed, err := tx.ParticipantClaim(ctx, cur.ParticipantID, store.Claim{
			BindingJSON: string(canonical), BindingDigest: digest, TokenHash: secret.Hash(token), ClaimedAt: now,
		})
		if err != nil {
			return err
		}
		if claimed {
			return tx.AgreementBump(ctx, cur.AgreementID)
		}
		p, err := tx.ParticipantGet(ctx, cur.ParticipantID)
		if err != nil {
			return err
		}
		if p.PublicKey != nil {
			refusal = "your place is bound to a key, so every decision must be signed with it: decide over the API."
			return nil
		}
		token = v.Keys.ParticipantToken(p.BindingDigest)
		return nil
	})
	return token, refusal, err
}

// staleDigest says why a decision's digest is not the current revision's.
func (v *Venue) staleDigest(ctx context.Context, agreementID uuid.UUID, digest string, cur store.Revision) string {
	if digest != "" {
		if revs, err := v.Store.RevisionList(ctx, agreementID); err == nil {
			for _, r := range revs {
				if strings.HasPrefix(r.RevisionDigest, digest) && r.Number != cur.Number {
					return fmt.Sprintf("your reply names revision %d, but revision %d is now current.", r.Number, cur.Number)
				}
			}
		}
	}
	return "your reply names no revision of this agreement."
}

// refuseReply records a refused reply and queues its answer.
func (v *Venue) refuseReply(ctx context.Context, in ReplyInput, inv store.InvitationDetail, rev store.Revision, reason string) (ReplyResult, error) {
	now := canon.Now(v.now())
	var wrote bool
	err := v.Store.InTx(ctx, func(tx *store.Tx) error {
		var err error
		wrote, err = tx.ReplyWrite(ctx, v.replyWrite(in, inv, rev, reason, now))
		return err
	})
	if errors.Is(err, room.ErrConflict) || err == nil && !wrote {
		return ReplyResult{}, nil
	}
	if err != nil {
		return ReplyResult{}, err
	}
	return ReplyResult{Acted: true, Reason: reason}, nil
}

// replyWrite is the reply's row and its answer: recorded when reason is
// empty, refused with reason otherwise. The answer's Message-ID comes from
// the reply's, so a second answer to one reply cannot be queued.
func (v *Venue) replyWrite(in ReplyInput, inv store.InvitationDetail, rev store.Revision, reason string, now time.Time) store.ReplyWrite {
	result := store.ReplyRecorded
	if reason != "" {
		result = store.ReplyRefused
	}
	body := mail.AnswerBody(mail.AnswerInput{
		Origin: v.Origin, Title: v.replyTitle(rev), Recorded: reason == "", Action: in.Action, Reason: reason,
		RevisionNumber: rev.Number, RevisionDigest: rev.RevisionDigest,
	})
	h := sha256.Sum256([]byte(in.MessageID))
	id := uuid.NewSHA1(uuid.NameSpaceOID, h[:])
	return store.ReplyWrite{
		Reply: store.Reply{MessageID: in.MessageID, InvitationID: inv.ID, RawSHA256: in.RawSHA256, Result: result, Reason: reason, ReceivedAt: now},
		Answer: store.OutboxMessage{
			ID: id, InvitationID: inv.ID, AgreementID: inv.AgreementID, Recipient: inv.Email,
			Subject: mail.AnswerSubject(v.replyTitle(rev)), MessageID: "answer-" + id.String() + "@" + originHost(v.Origin),
			SealedBody: v.Keys.Seal([]byte(body), id[:]), CreatedAt: now, Kind: store.OutboxAnswer,
		},
	}
}

// replyTitle is the revision's title, read from its canonical object.
func (v *Venue) replyTitle(rev store.Revision) string {
	var a struct {
		Title string `json:"title"`
	}
	if err := json.Unmarshal(rev.Canonical, &a); err != nil || a.Title == "" {
		return "an agreement"
	}
	return a.Title
}

// refusable reports a refusal of the room, answered to the sender.
func refusable(err error) bool {
	var ve *room.ValidationError
	return errors.Is(err, room.ErrRoomClosed) || errors.Is(err, room.ErrAlreadyDecided) || errors.Is(err, room.ErrEventLimit) ||
		errors.Is(err, room.ErrRevisionMismatch) || errors.As(err, &ve)
}

// reasonOf is how the answer states a refusal of the room.
func reasonOf(err error) string {
	switch {
	case errors.Is(err, room.ErrRoomClosed):
		return "the outcome is final; the room accepts no more events."
	case errors.Is(err, room.ErrAlreadyDecided):
		return "you have already decided."
	case errors.Is(err, room.ErrEventLimit):
		return "you have reached the event limit for this revision."
	case errors.Is(err, room.ErrRevisionMismatch):
		return "a new revision was locked while your reply was read."
	}
	return "the reply is not a valid event: " + err.Error()
}
