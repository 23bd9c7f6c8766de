package venue

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
)

// EventInput is the events request body as sent; pointers tell a missing
// field from an empty one.
type EventInput struct {
	Action   *string `json:"action"`
	Body     *string `json:"body"`
	Revision *int    `json:"revision"`
	Digest   *string `json:"digest"`
	// To names the participants a question or change request asks;
	// InReplyTo the question or change request a comment answers.
	To        []string `json:"to"`
	InReplyTo *string  `json:"inReplyTo"`
}

// command checks the key and the body's syntax and returns the normalized
// room-command/v1 object (a keyed author's event stores it as version 2,
// see checkSignature), save the ids of its author, which only the
// credential check under the agreement's lock names. Errors are
// *room.ValidationError.
func (v *Venue) command(key string, in EventInput) (room.Command, error) {
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
	if err := room.ValidateAddressing(*in.Action, in.To, in.InReplyTo); err != nil {
		return room.Command{}, err
	}
	digest, err := canon.ParseDigest(*in.Digest)
	if err != nil {
		return room.Command{}, &room.ValidationError{Field: "digest", Reason: err.Error()}
	}
	cmd := room.Command{
		Schema: fmt.Sprintf(room.RoomCommandSchemaFmt, v.Origin), Version: 1, Revision: *in.Revision,
		RevisionDigest: digest, Action: *in.Action, Body: body, To: in.To,
	}
	if in.InReplyTo != nil {
		cmd.InReplyTo = *in.InReplyTo
	}
	return cmd, nil
}

// Posted is the result of posting (or replaying) an event.
type Posted struct {
	Event   EventView   `json:"event"`
	Outcome OutcomeView `json:"outcome"`
	// Tag is the poster's RoomTag as of this write: of the version the
	// event's append made (for a replay, of the version it was read at),
	// so a wait from it is not woken by the post itself and misses no
	// change after it. The MCP facade returns it; REST does not.
	Tag RoomTag `json:"-"`
}

// PostEvent is PostEventAs with the credential p authenticated with (it is
// checked again under the agreement's lock): the MCP facade's route. sig is
// the signature the tool call carries, nil when none, under the same rules
// as the Consensus-Signature header.
func (v *Venue) PostEvent(ctx context.Context, p *Principal, key string, sig *string, in EventInput) (*Posted, bool, error) {
	return v.PostEventAs(ctx, p.credential(), key, sig, in)
}

// PostEventAs stores one event under the agreement's row lock, in the order
// the contract fixes: the credential (*UnauthorizedError); key and body
// syntax (*room.ValidationError); idempotent replay (created false) or
// room.ErrIdempotencyKeyReused; room.ErrRevisionMismatch,
// room.ErrRoomClosed, room.ErrAlreadyDecided, room.ErrEventLimit. A
// terminal decision that completes the rule finalizes the outcome and, when
// reached, stores CONSENSUS.md in the same transaction.
//
// The credential is checked in the transaction that stores the event,
// after it took the agreement's lock, which revocation takes too;
// it is looked up before only when the body is malformed, so that a bad
// credential still answers first. The transaction takes two round trips
// (store.Append), and the decision rule gets its snapshot from the roster's
// counters, never from the history.
//
// sig is the Consensus-Signature header, nil when absent. A participant
// that bound a key must sign every event, replays included, over the
// room-command/v2 object (the command bound to its Idempotency-Key): right
// after the credential, under the lock, a missing signature is
// room.ErrSignatureRequired and one that does not verify over the command
// is room.ErrBadSignature (so is any signature from a participant without
// a key). After the replay check, a new event signed over
// room-command/v1, or carrying a signature its participant already
// stored, is room.ErrBadSignature too; nothing is stored in any case.
func (v *Venue) PostEventAs(ctx context.Context, c ParticipantCredential, key string, sig *string, in EventInput) (*Posted, bool, error) {
	return v.postEvent(ctx, c, key, sig, in, "", nil)
}

// postEvent is PostEventAs. A reply's event carries its evidence and is
// appended in the reply's transaction tx, which holds the claim of its
// slot (so the credential is not looked up outside tx); with a nil tx the
// event commits on its own.
func (v *Venue) postEvent(ctx context.Context, c ParticipantCredential, key string, sig *string, in EventInput, evidence string, tx *store.Tx) (*Posted, bool, error) {
	appendWith := v.append
	if tx != nil {
		appendWith = tx.Append
	}
	cmd, err := v.command(key, in)
	if err != nil {
		if tx == nil {
			if _, authErr := v.authParticipant(ctx, c); authErr != nil {
				return nil, false, authErr
			}
		}
		return nil, false, err
	}
	// The event a reply names is looked up before the append: events are
	// never changed or removed, so one found now is there under the lock,
	// and it is earlier than the reply. decide checks it is in the room.
	var target struct {
		found       bool
		agreementID uuid.UUID
		action      string
	}
	if cmd.InReplyTo != "" {
		tid, _ := uuid.Parse(cmd.InReplyTo)
		switch aid, action, err := v.Store.EventReplyTarget(ctx, tid); {
		case err == nil:
			target.found, target.agreementID, target.action = true, aid, action
		case !errors.Is(err, room.ErrNotFound):
			return nil, false, err
		}
	}
	var rev *revisionBlock
	id, known := v.rooms().agreementOf(c.invitationID)
	if known {
		rev = v.rooms().revision(id)
	}
	// Only a terminal decision can change the outcome, so only it reads the
	// roster; any other action is judged against the stored outcome.
	req := store.AppendRequest{TokenHash: c.tokenHash, AgreementID: id, IdempotencyKey: key, WithRevision: rev == nil, SkipRoster: !room.IsTerminal(cmd.Action)}
	if sig != nil {
		// Asks whether its participant stored this signature already.
		req.Signature, _ = jwk.DecodeSignature(*sig)
	}
	// decide may run on a batch's worker, again after a failed batch, or
	// after this call returned at its deadline: it reads what it captured
	// and tells its result only through the write's Result.
	decide := func(st *store.AppendState) (store.AppendWrite, error) {
		now := canon.Now(v.now())
		a, me := st.Agreement, st.Holder
		if me == nil || me.InvitationID != c.invitationID || me.RevokedAt != nil || me.Kind != c.kind || !secret.Equal(me.TokenHash, c.tokenHash) {
			return store.AppendWrite{}, &UnauthorizedError{Scheme: SchemeParticipant}
		}
		res := &postResult{agreementID: a.ID}
		cmd := cmd
		cmd = slotCommand(cmd, a.ID, me.InvitationID, me.ID)
		cmd, signature, v1, err := checkSignature(me.PublicKey, cmd, v.Origin, key, sig)
		if err != nil {
			return store.AppendWrite{}, err
		}
		cmdDigest := commandDigest(cmd)
		if prior := st.Prior; prior != nil {
			same := prior.CommandDigest == cmdDigest
			if !same && signature != nil {
				// A keyed event stored before room-command/v2, or after it and
				// replayed with its v1 signature: the same command either way.
				same = prior.CommandDigest == commandDigest(cmd.Unsigned(v.Origin)) || prior.CommandDigest == commandDigest(cmd.Signed(v.Origin, key))
			}
			if !same {
				res.refusal = room.ErrIdempotencyKeyReused
				return store.AppendWrite{Result: res}, nil
			}
			res.posted = &Posted{Event: eventView(*prior), Outcome: outcomeView(a.Outcome),
				Tag: roomTag(a.ID, me.ID, a.Version, lapsed(a.Outcome.Status, a.Deadline, now))}
			return store.AppendWrite{Result: res}, nil
		}
		switch {
		case v1:
			return store.AppendWrite{}, v1SignatureError(v.Origin)
		case signature != nil && st.SignatureEvent != nil:
			return store.AppendWrite{}, signatureStoredError(*st.SignatureEvent)
		}
		rev := rev
		if st.Revision != nil {
			// Read with the append: the caller caches it once Append returned.
			if rev, err = newRevisionBlock(*st.Revision); err != nil {
				return store.AppendWrite{}, err
			}
			res.read = rev
		}
		if rev == nil || rev.AgreementID != a.ID || rev.Number != a.CurrentRevision {
			return store.AppendWrite{}, errNewRevision
		}
		h, err := ruleOf(a, rev.Revision, st.Roster)
		if err != nil {
			return store.AppendWrite{}, err
		}
		snap := room.Snapshot{Revision: a.CurrentRevision, RevisionDigest: rev.RevisionDigest, Terms: h.Terms, Deadline: a.Deadline,
			Roster: h.Roster, Events: h.Events, ParticipantEvents: me.EventsOn(a.CurrentRevision), Stored: &a.Outcome, Rule: h.Rule}
		outcome, admitErr := room.Admit(snap, cmd, now)
		if admitErr != nil {
			res.refusal = admitErr
			if !a.Outcome.Final() && outcome.Status == room.StatusExpired {
				return store.AppendWrite{Outcome: &outcome, Result: res}, nil // the expiry found here is stored
			}
			return store.AppendWrite{Result: res}, nil
		}
		if err := room.CheckAddressees(cmd.To, cmd.ParticipantID, rev.members); err != nil {
			res.refusal = err
			return store.AppendWrite{Result: res}, nil
		}
		if cmd.InReplyTo != "" {
			if err := room.CheckReplyTarget(target.found && target.agreementID == a.ID, target.action); err != nil {
				res.refusal = err
				return store.AppendWrite{Result: res}, nil
			}
		}
		e := store.Event{
			ID: uuid.New(), AgreementID: a.ID, Seq: a.Head.Seq + 1, ParticipantID: me.ID, Revision: a.CurrentRevision,
			Action: cmd.Action, Body: cmd.Body, IdempotencyKey: key, CommandDigest: cmdDigest, CreatedAt: now, PrevHash: a.Head.Hash,
			Signature: signature, To: uuids(cmd.To),
		}
		if cmd.InReplyTo != "" {
			e.InReplyTo = uuid.NullUUID{UUID: uuid.MustParse(cmd.InReplyTo), Valid: true}
		}
		e.Evidence = evidence
		e.Hash = chainHash(e)
		w := store.AppendWrite{Event: &e, Result: res}
		final := a.Outcome
		if room.IsTerminal(cmd.Action) {
			var err error
			snap.Events = append(snap.Events, e.RoomEvent())
			if final, w.Artifact, err = finalize(rev.Revision, snap, e, now, signingKeys(st.Roster, me)); err != nil {
				return store.AppendWrite{}, err
			}
			if final.Final() {
				w.Outcome = &final
			}
		}
		// The append adds one to the agreement's version (EventAppendBatch),
		// outcome and artifact included.
		res.posted, res.created = &Posted{Event: eventView(e), Outcome: outcomeView(final),
			Tag: roomTag(a.ID, me.ID, a.Version+1, lapsed(final.Status, a.Deadline, now))}, true
		return w, nil
	}
	out, err := appendWith(ctx, req, decide)
	if errors.Is(err, errNewRevision) {
		// Not the revision cached: read the current one with the append.
		req.WithRevision = true
		out, err = appendWith(ctx, req, decide)
	}
	if err != nil {
		return nil, false, err
	}
	res := out.(*postResult)
	if res.read != nil {
		v.rooms().keepBlock(res.read)
	}
	v.rooms().learnAgreement(c.invitationID, res.agreementID)
	if res.refusal != nil {
		return nil, false, res.refusal
	}
	return res.posted, res.created, nil
}

// postResult is what PostEventAs's decision tells it.
type postResult struct {
	agreementID uuid.UUID // the credential's, once checked
	posted      *Posted
	created     bool
	refusal     error
	// read is the current revision, when the append read it, for the cache.
	read *revisionBlock
}

// errNewRevision: the cached revision is not the agreement's current one.
var errNewRevision = errors.New("venue: a newer revision than the one cached")

// signingKeys maps the id of each participant of roster that bound a key,
// and of the poster me, to its key's RFC 7638 thumbprint. A participant
// that bound a key signs every event it posts, and none of its decisions
// comes from a reply email (a keyed slot cannot decide by email), so each
// of its decisions is signed with that key.
func signingKeys(roster []store.RuleMember, me *store.TokenHolder) map[string]string {
	keys := map[string]string{}
	add := func(id uuid.UUID, key []byte) {
		if len(key) == ed25519.PublicKeySize {
			keys[id.String()] = jwk.FromPublic(key).Thumbprint()
		}
	}
	for _, m := range roster {
		add(m.ID, m.PublicKey)
	}
	add(me.ID, me.PublicKey)
	return keys
}

// finalize evaluates the rule after the terminal event last; a reached
// outcome comes with the CONSENSUS.md to store with it.
func finalize(rev store.Revision, snap room.Snapshot, last store.Event, now time.Time, keys map[string]string) (room.Outcome, *store.Artifact, error) {
	outcome := snap.History().Outcome(now)
	if outcome.Status != room.StatusReached {
		return outcome, nil, nil
	}
	md, err := renderArtifact(rev, snap, last, outcome, now, keys)
	if err != nil {
		return outcome, nil, err
	}
	return outcome, &store.Artifact{AgreementID: last.AgreementID, Revision: snap.Revision, Body: md, SHA256: canon.Digest(md), FinalizedAt: now}, nil
}

// uuids parses ids that ValidateAddressing accepted; nil for none.
func uuids(ids []string) []uuid.UUID {
	if len(ids) == 0 {
		return nil
	}
	out := make([]uuid.UUID, len(ids))
	for i, id := range ids {
		out[i] = uuid.MustParse(id)
	}
	return out
}
