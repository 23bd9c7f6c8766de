package venue

import (
	"cmp"
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

// ReplyInvitation is the invitation a reply's address names, read once
// before the reply is authenticated: its Email is the address the reply
// must come from (a slot's address never changes). room.ErrNotFound for
// an unknown invitation. What may change meanwhile (a revocation, a claim,
// the deadline, the revision) Reply reads under the agreement's lock.
func (v *Venue) ReplyInvitation(ctx context.Context, invitationID uuid.UUID) (store.InvitationDetail, error) {
	return v.Store.InvitationGet(ctx, invitationID)
}

// ReplyInput is one authenticated reply: its invitation (from the tag of
// the address it was sent to, as ReplyInvitation read it), what its new
// text says, and the evidence that the invited address sent it.
type ReplyInput struct {
	Invitation store.InvitationDetail
	MessageID  string
	// Action is agree, disagree, abstain or comment; Digest (a decision's)
	// is the revision digest or its first 12 characters, lower case; Body
	// is a comment's text. Refusal, when set, refuses the reply with that
	// reason before anything else (an empty text, one too long).
	Action, Digest, Body string
	Refusal              string
	// Evidence is the DKIM signature the reply was accepted on: its b= and
	// bh= values key the reply besides its Message-ID. Never nil.
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

// errReplyIgnored ends a reply's transaction without writing anything: the
// reply was acted on before, or its participant is revoked.
var errReplyIgnored = errors.New("venue: reply ignored")

// Reply acts on one reply email in one transaction, under the agreement's
// lock: it claims an unclaimed slot for the invited address (assurance
// recipient-dkim-reply), posts the event through the same append as the
// events route (every rule of the room holds) with the evidence attached,
// and stores the reply's row and exactly one answer to the invited
// address, which all commit together. A reply refused (deadline passed,
// an old or unknown digest, a slot bound to a key, any refusal of the
// room) commits only its row and the answer stating the refusal: a claim
// made for its event is undone with the event. A reply seen before (its
// Message-ID, its DKIM signature, or its signed body in its invitation)
// and a revoked participant's reply are ignored: nothing is written.
func (v *Venue) Reply(ctx context.Context, in ReplyInput) (ReplyResult, error) {
	if in.Evidence == nil {
		return ReplyResult{}, errors.New("venue: reply: no evidence")
	}
	var res ReplyResult
	err := v.Store.InTx(ctx, func(tx *store.Tx) error {
		var err error
		res, err = v.replyIn(ctx, tx, in)
		return err
	})
	if errors.Is(err, errReplyIgnored) {
		return ReplyResult{}, nil
	}
	return res, err
}

// replyIn is Reply in its transaction tx.
func (v *Venue) replyIn(ctx context.Context, tx *store.Tx, in ReplyInput) (ReplyResult, error) {
	inv := in.Invitation
	a, err := tx.AgreementLock(ctx, inv.AgreementID)
	if err != nil {
		return ReplyResult{}, err
	}
	p, err := tx.ParticipantGet(ctx, inv.ParticipantID)
	if err != nil {
		return ReplyResult{}, err
	}
	if p.RevokedAt != nil {
		return ReplyResult{}, errReplyIgnored
	}
	if seen, err := tx.ReplySeen(ctx, replyRow(in)); err != nil || seen {
		return ReplyResult{}, cmp.Or(err, errReplyIgnored)
	}
	rev, err := v.rooms().lockedRevision(ctx, tx, a.ID, a.CurrentRevision)
	if err != nil {
		return ReplyResult{}, err
	}
	now := canon.Now(v.now())
	refuse := func(reason string) (ReplyResult, error) {
		if err := v.writeReply(ctx, tx, in, rev, reason, uuid.Nil, now); err != nil {
			return ReplyResult{}, err
		}
		return ReplyResult{Acted: true, Reason: reason}, nil
	}
	switch {
	case in.Refusal != "":
		return refuse(in.Refusal)
	case !now.Before(a.Deadline): // an invitation expires with the deadline
		return refuse("the deadline has passed.")
	case room.IsTerminal(in.Action) && !strings.HasPrefix(rev.RevisionDigest, in.Digest):
		return refuse(staleDigest(in.Digest, rev))
	case p.PublicKey != nil:
		return refuse("your place is bound to a key, so every decision must be signed with it: decide over the API.")
	}
	var refusal string
	var posted *Posted
	err = tx.Savepoint(ctx, func(tx *store.Tx) error {
		var err error
		posted, refusal, err = v.replyEvent(ctx, tx, in, p, rev, now)
		if err == nil && refusal != "" {
			err = errReplyRefused // undoes the claim
		}
		return err
	})
	switch {
	case errors.Is(err, errReplyRefused):
		return refuse(refusal)
	case err != nil:
		return ReplyResult{}, err
	}
	id := uuid.MustParse(posted.Event.ID)
	if err := v.writeReply(ctx, tx, in, rev, "", id, now); err != nil {
		return ReplyResult{}, err
	}
	return ReplyResult{Acted: true, Recorded: true, EventID: posted.Event.ID}, nil
}

// errReplyRefused undoes, to its savepoint, what a refused reply's event
// wrote.
var errReplyRefused = errors.New("venue: reply refused")

// replyEvent claims p's slot if nobody has, and posts the reply's event
// with its evidence, both in tx. A refusal of the room comes back as the
// reason the answer states, for the caller to undo the claim.
func (v *Venue) replyEvent(ctx context.Context, tx *store.Tx, in ReplyInput, p store.Participant, rev store.Revision, now time.Time) (*Posted, string, error) {
	token, err := v.replyClaim(ctx, tx, p, rev, now)
	if err != nil {
		return nil, "", err
	}
	evidence, err := canon.Marshal(in.Evidence)
	if err != nil {
		return nil, "", err
	}
	number, digest := rev.Number, rev.RevisionDigest
	body := in.Body
	if room.IsTerminal(in.Action) {
		body = ""
	}
	action := in.Action
	c := ParticipantCredential{kind: p.Kind, invitationID: p.InvitationID, tokenHash: secret.Hash(token)}
	posted, created, err := v.postEvent(ctx, c, replyKey(in.MessageID), nil,
		EventInput{Action: &action, Body: &body, Revision: &number, Digest: &digest}, string(evidence), tx)
	switch {
	case err != nil && refusable(err):
		return nil, reasonOf(err), nil
	case err != nil:
		return nil, "", err
	case !created:
		return nil, "", errReplyIgnored // stored before under the reply's key: acted on already
	}
	return posted, "", nil
}

// replyKey is the idempotency key of a reply's event, from its Message-ID.
func replyKey(messageID string) string {
	h := sha256.Sum256([]byte(messageID))
	return "reply:" + hex.EncodeToString(h[:16])
}

// replyClaim returns the participant token of p's slot, claiming the slot
// in tx for the invited address first if nobody has.
func (v *Venue) replyClaim(ctx context.Context, tx *store.Tx, p store.Participant, rev store.Revision, now time.Time) (string, error) {
	if p.BindingDigest != "" {
		return v.Keys.ParticipantToken(p.BindingDigest), nil
	}
	binding := room.Binding{
		Schema: fmt.Sprintf(room.BindingSchemaFmt, v.Origin), Version: 1, AgreementID: p.AgreementID.String(),
		InvitationID: p.InvitationID.String(), ParticipantID: p.ID.String(), Inbox: p.Email,
		Assurance: room.AssuranceDKIMReply, Revision: rev.Number, RevisionDigest: rev.RevisionDigest,
	}
	canonical, digest, err := canon.DigestOf(binding)
	if err != nil {
		return "", err
	}
	token := v.Keys.ParticipantToken(digest)
	claimed, err := tx.ParticipantClaim(ctx, p.ID, store.Claim{
		BindingJSON: string(canonical), BindingDigest: digest, TokenHash: secret.Hash(token), ClaimedAt: now,
	})
	switch {
	case err != nil:
		return "", err
	case !claimed:
		// A claim takes the agreement's lock, which this transaction holds.
		return "", errors.New("venue: reply: the slot was claimed under the agreement's lock")
	}
	return token, tx.AgreementBump(ctx, p.AgreementID)
}

// staleDigest says why a decision's digest is not the current revision's.
func staleDigest(digest string, cur store.Revision) string {
	if digest != "" {
		for _, r := range cur.History {
			if strings.HasPrefix(r.RevisionDigest, digest) && r.Number != cur.Number {
				return fmt.Sprintf("your reply names revision %d, but revision %d is now current.", r.Number, cur.Number)
			}
		}
	}
	return "your reply names no revision of this agreement."
}

// writeReply stores the reply's row and queues its answer in tx: recorded
// (with its event) when reason is empty, refused with reason otherwise. A
// reply that another transaction stored meanwhile is errReplyIgnored,
// which rolls back whatever the reply wrote.
func (v *Venue) writeReply(ctx context.Context, tx *store.Tx, in ReplyInput, rev store.Revision, reason string, eventID uuid.UUID, now time.Time) error {
	w := v.replyWrite(in, rev, reason, now)
	w.Reply.EventID = uuid.NullUUID{UUID: eventID, Valid: eventID != uuid.Nil}
	wrote, err := tx.ReplyWrite(ctx, w)
	if err == nil && !wrote {
		err = errReplyIgnored
	}
	return err
}

// replyRow is the reply's row, with the keys a reply seen before matches.
func replyRow(in ReplyInput) store.Reply {
	return store.Reply{
		MessageID: in.MessageID, InvitationID: in.Invitation.ID, RawSHA256: in.RawSHA256,
		DKIMSignature: in.Evidence.DKIM.Signature, DKIMBodyHash: in.Evidence.DKIM.BodyHash,
	}
}

// replyWrite is the reply's row and its answer: recorded when reason is
// empty, refused with reason otherwise. The answer's Message-ID comes from
// the reply's, so a second answer to one reply cannot be queued.
func (v *Venue) replyWrite(in ReplyInput, rev store.Revision, reason string, now time.Time) store.ReplyWrite {
	inv := in.Invitation
	row := replyRow(in)
	row.Result, row.Reason, row.ReceivedAt = store.ReplyRecorded, reason, now
	if reason != "" {
		row.Result = store.ReplyRefused
	}
	body := mail.AnswerBody(mail.AnswerInput{
		Origin: v.Origin, Title: v.replyTitle(rev), Recorded: reason == "", Action: in.Action, Reason: reason,
		RevisionNumber: rev.Number, RevisionDigest: rev.RevisionDigest,
	})
	h := sha256.Sum256([]byte(in.MessageID))
	id := uuid.NewSHA1(uuid.NameSpaceOID, h[:])
	// The answer threads under the reply it answers (and, as every email
	// of the invitation, under the invitation's first email).
	var refs []string
	if replyID, ok := mail.MessageID(in.MessageID); ok {
		refs = []string{replyID}
	}
	return store.ReplyWrite{
		Reply: row,
		Answer: store.OutboxMessage{
			ID: id, InvitationID: inv.ID, AgreementID: inv.AgreementID, Recipient: inv.Email,
			Subject: mail.AnswerSubject(v.replyTitle(rev)), MessageID: "answer-" + id.String() + "@" + originHost(v.Origin),
			SealedBody: v.Keys.Seal([]byte(body), id[:]), CreatedAt: now, Kind: store.OutboxAnswer, References: refs,
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
