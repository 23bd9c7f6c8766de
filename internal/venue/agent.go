package venue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
)

// Actions are the absolute URLs of the routes of one invitation, in the
// family of its kind (agentroute.ForKind).
// The members follow the router's table (a test holds them to it).
type Actions struct {
	Claim    string `json:"claim"`
	Room     string `json:"room"`
	Events   string `json:"events"`
	Stream   string `json:"stream"`
	Webhook  string `json:"webhook"`
	Artifact string `json:"artifact"`
	Record   string `json:"record"`
	// RecordProof is the record's transparency log proof.
	RecordProof string `json:"recordProof"`
}

func (v *Venue) actions(kind, invitationID string) Actions {
	u := agentroute.ForKind(v.Origin, kind, invitationID)
	base := v.Origin + agentroute.PrefixOf(kind) + invitationID
	return Actions{Claim: u.Claim, Room: u.Room, Events: u.Events, Stream: base + agentroute.Stream, Webhook: base + agentroute.Webhook,
		Artifact: u.Artifact, Record: u.Record, RecordProof: base + agentroute.RecordProof}
}

// ParticipantRef names the slot an invitation is for.
type ParticipantRef struct {
	ParticipantID string `json:"participantId"`
	DisplayName   string `json:"displayName"`
	Kind          string `json:"kind"`
}

// Exchanged is the result of a successful exchange.
type Exchanged struct {
	SessionToken     string `json:"sessionToken"`
	SessionExpiresAt string `json:"sessionExpiresAt"`
	InvitationID     string `json:"invitationId"`
	AgreementID      string `json:"agreementId"`
	RevisionNumber   int    `json:"revisionNumber"`
	RevisionDigest   string `json:"revisionDigest"`
	MarkdownDigest   string `json:"markdownDigest"`
	TermsDigest      string `json:"termsDigest"`
	// Revisions lists every locked revision, oldest first, so an invitation
	// sent for an earlier one can be traced to the current one.
	Revisions         []RevisionSummaryView `json:"revisions"`
	CanonicalRevision json.RawMessage       `json:"canonicalRevision"`
	Markdown          string                `json:"markdown"`
	Participant       ParticipantRef        `json:"participant"`
	Actions           Actions               `json:"actions"`
}

// liveInvitation loads an invitation usable now on the routes of the family
// of kind (room.KindAgent or room.KindHuman): it exists, its participant is
// of that kind, it is not revoked and its deadline has not passed. Every
// other case is room.ErrNotFound, indistinguishable by design.
func (v *Venue) liveInvitation(ctx context.Context, kind, invitationID string, now time.Time) (store.InvitationDetail, error) {
	id, err := parseID(invitationID)
	if err != nil {
		return store.InvitationDetail{}, err
	}
	inv, err := v.Store.InvitationGet(ctx, id)
	if err != nil {
		return store.InvitationDetail{}, err
	}
	if !usable(inv, kind, now) {
		return store.InvitationDetail{}, room.ErrNotFound
	}
	return inv, nil
}

// usable reports whether inv admits the routes of the family of kind at now.
func usable(inv store.InvitationDetail, kind string, now time.Time) bool {
	return inv.Kind == kind && inv.RevokedAt == nil && now.Before(inv.ExpiresAt)
}

// Exchange trades the invitation secret for a session of at most 20
// minutes, never beyond the invitation's expiry. It records nothing about
// approval. kind names the family of the route (room.KindAgent or
// room.KindHuman). Unknown id, wrong secret, expired, revoked and an
// invitation of the other kind all return room.ErrNotFound.
func (v *Venue) Exchange(ctx context.Context, kind, invitationID, inviteSecret string) (*Exchanged, error) {
	now := canon.Now(v.now())
	inv, err := v.liveInvitation(ctx, kind, invitationID, now)
	if err != nil {
		return nil, err
	}
	if !secret.Equal(secret.Hash(secret.NormalizeInviteSecret(inviteSecret)), inv.SecretHash) {
		return nil, room.ErrNotFound
	}
	rev, err := v.rooms().lockedRevision(ctx, v.Store, inv.AgreementID, inv.CurrentRevision)
	if err != nil {
		return nil, fmt.Errorf("venue: exchange: %w", err)
	}
	token := secret.NewSessionToken()
	// Whole seconds, rounded down: sessionExpiresAt is served in the
	// deadline shape, and the stored expiry is exactly the served one.
	expires := now.Add(SessionLifetime).Truncate(time.Second)
	if inv.ExpiresAt.Before(expires) {
		expires = inv.ExpiresAt
	}
	if err := v.Store.SessionInsert(ctx, store.Session{TokenHash: secret.Hash(token), InvitationID: inv.ID, ExpiresAt: expires, CreatedAt: now}); err != nil {
		return nil, fmt.Errorf("venue: exchange: %w", err)
	}
	return &Exchanged{
		SessionToken: token, SessionExpiresAt: canon.FormatSeconds(expires), InvitationID: inv.ID.String(),
		AgreementID: inv.AgreementID.String(), RevisionNumber: rev.Number, RevisionDigest: rev.RevisionDigest,
		MarkdownDigest: rev.MarkdownDigest, TermsDigest: rev.TermsDigest, Revisions: revisionsView(rev.History[:rev.Number]),
		CanonicalRevision: json.RawMessage(rev.Canonical), Markdown: rev.Markdown,
		Participant: ParticipantRef{ParticipantID: inv.ParticipantID.String(), DisplayName: inv.DisplayName, Kind: inv.Kind},
		Actions:     v.actions(inv.Kind, inv.ID.String()),
	}, nil
}

// ClaimInput is the claim body. Pointers tell a missing field from an empty
// one. A person's claim carries EmailProof only: the proof shows that its
// sender reads the invited mailbox, so the binding records that address.
type ClaimInput struct {
	EmailProof      *string `json:"emailProof"`
	Inbox           *string `json:"inbox"`
	RuntimeEndpoint *string `json:"runtimeEndpoint"`
	// PublicKey and KeyProof bind an Ed25519 key (participant-binding/v2);
	// both absent (or null) keep the v1 claim unchanged.
	PublicKey json.RawMessage `json:"publicKey"`
	KeyProof  *string         `json:"keyProof"`
}

// Claimed is the result of a claim or of its exact replay.
type Claimed struct {
	ParticipantToken string `json:"participantToken"`
	ParticipantID    string `json:"participantId"`
	BindingDigest    string `json:"bindingDigest"`
	// Binding is the room.Binding (v1) or room.KeyedBinding (v2) hashed.
	Binding           any     `json:"binding"`
	Assurance         string  `json:"assurance"`
	CountsAsSignature bool    `json:"countsAsSignature"`
	Actions           Actions `json:"actions"`
}

// SessionGrant is a session token checked for one usable invitation.
type SessionGrant struct {
	inv store.InvitationDetail
	// sessionHash is what a claim checks again under the agreement's lock.
	sessionHash []byte
}

// AuthSession checks a Consensus-Session token for the invitation in the
// path of a route of the family of kind: unknown, expired or another
// invitation's session is *UnauthorizedError; an invitation no longer
// usable (revoked, expired, of the other kind) is room.ErrNotFound; a
// database failure (room.ErrUnavailable) comes back as it is, never as a
// verdict on the token.
func (v *Venue) AuthSession(ctx context.Context, kind, invitationID, sessionToken string) (*SessionGrant, error) {
	now := v.now()
	hash := secret.Hash(sessionToken)
	sess, err := v.Store.SessionGet(ctx, hash)
	if err != nil && !errors.Is(err, room.ErrNotFound) {
		return nil, err
	}
	if err != nil || sess.InvitationID.String() != invitationID || !now.Before(sess.ExpiresAt) {
		return nil, &UnauthorizedError{Scheme: SchemeSession}
	}
	inv, err := v.liveInvitation(ctx, kind, invitationID, now)
	if err != nil {
		return nil, err
	}
	return &SessionGrant{inv: inv, sessionHash: hash}, nil
}

// Claim binds the slot to the inbox that proves it holds the email proof.
// The participant token is derived from the binding, so an identical claim
// replays the same token; a different claim after the first is
// room.ErrClaimConflict. Errors, in the order checked: *room.ValidationError
// (body), room.ErrProofMismatch, then, under the agreement's lock, the
// session again (*UnauthorizedError), the invitation again (room.ErrNotFound
// once revoked or expired), the proof again (a resend replaced it) and
// room.ErrClaimConflict. Checking under the lock that revocation takes
// means a claim either commits before a revoke or is refused.
// A person's claim (a human invitation) takes the proof alone and binds
// the invited address, with no runtime endpoint.
func (v *Venue) Claim(ctx context.Context, g *SessionGrant, in ClaimInput) (*Claimed, error) {
	now := canon.Now(v.now())
	if in.EmailProof == nil || *in.EmailProof == "" {
		return nil, &room.ValidationError{Field: "emailProof", Reason: "is required: the email_proof from the invitation email"}
	}
	if g.inv.Kind == room.KindHuman {
		if in.Inbox != nil {
			return nil, &room.ValidationError{Field: "inbox", Reason: "is not accepted on a person's claim: the proof alone shows the invited mailbox"}
		}
		if in.RuntimeEndpoint != nil {
			return nil, &room.ValidationError{Field: "runtimeEndpoint", Reason: "is not accepted on a person's claim"}
		}
		in.Inbox = &g.inv.Email
	}
	if in.Inbox == nil {
		return nil, &room.ValidationError{Field: "inbox", Reason: "is required: the address the invitation was sent to"}
	}
	inbox, err := room.NormalizeInbox("inbox", *in.Inbox)
	if err != nil {
		return nil, err
	}
	if in.RuntimeEndpoint != nil {
		if err := room.ValidateRuntimeEndpoint(*in.RuntimeEndpoint); err != nil {
			return nil, err
		}
	}
	key, err := claimKey(in)
	if err != nil {
		return nil, err
	}
	proofHash := secret.Hash(*in.EmailProof)
	if !proves(g.inv, proofHash, inbox) {
		return nil, room.ErrProofMismatch
	}
	var out *Claimed
	err = v.Store.InTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.AgreementLock(ctx, g.inv.AgreementID); err != nil {
			return err
		}
		sess, err := tx.SessionGet(ctx, g.sessionHash)
		switch {
		case errors.Is(err, room.ErrNotFound):
			return &UnauthorizedError{Scheme: SchemeSession}
		case err != nil:
			return err
		case sess.InvitationID != g.inv.ID || !now.Before(sess.ExpiresAt):
			return &UnauthorizedError{Scheme: SchemeSession}
		}
		inv, err := tx.InvitationGet(ctx, g.inv.ID)
		if err != nil {
			return err
		}
		if !usable(inv, g.inv.Kind, now) {
			return room.ErrNotFound
		}
		if !proves(inv, proofHash, inbox) {
			return room.ErrProofMismatch
		}
		rev, err := v.rooms().lockedRevision(ctx, tx, inv.AgreementID, inv.CurrentRevision)
		if err != nil {
			return fmt.Errorf("venue: claim: %w", err)
		}
		binding := room.Binding{
			Schema: fmt.Sprintf(room.BindingSchemaFmt, v.Origin), Version: 1, AgreementID: inv.AgreementID.String(),
			InvitationID: inv.ID.String(), ParticipantID: inv.ParticipantID.String(), Inbox: inbox,
			RuntimeEndpoint: in.RuntimeEndpoint, Assurance: room.Assurance, Revision: rev.Number, RevisionDigest: rev.RevisionDigest,
		}
		bound := v.bindingFor(binding, key)
		canonical, digest, err := canon.DigestOf(bound)
		if err != nil {
			return err
		}
		token := v.Keys.ParticipantToken(digest)
		claim := store.Claim{BindingJSON: string(canonical), BindingDigest: digest, TokenHash: secret.Hash(token), ClaimedAt: now}
		if key != nil {
			claim.PublicKey = key.public
		}
		// A refused proof below rolls the claim back with the transaction.
		claimed, err := tx.ParticipantClaim(ctx, inv.ParticipantID, claim)
		switch {
		case err != nil:
			return err
		case claimed:
			if err := key.signs(canonical); err != nil {
				return err
			}
			// The roster shows the slot claimed: a new version of the room.
			if err := tx.AgreementBump(ctx, inv.AgreementID); err != nil {
				return err
			}
		default:
			p, err := tx.ParticipantGet(ctx, inv.ParticipantID)
			if err != nil {
				return err
			}
			if bound, canonical, digest, err = v.replayBinding(p, binding, key); err != nil {
				return err
			}
			if err := key.signs(canonical); err != nil {
				return err
			}
			token = v.Keys.ParticipantToken(digest)
		}
		out = &Claimed{
			ParticipantToken: token, ParticipantID: inv.ParticipantID.String(), BindingDigest: digest, Binding: bound,
			Assurance: room.Assurance, CountsAsSignature: key != nil, Actions: v.actions(inv.Kind, inv.ID.String()),
		}
		if key != nil {
			out.Assurance = room.AssuranceKey
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// proves reports whether proofHash and inbox are those inv was sent with;
// the proof is compared in constant time.
func proves(inv store.InvitationDetail, proofHash []byte, inbox string) bool {
	proofOK := secret.Equal(proofHash, inv.ProofHash)
	return proofOK && inbox == inv.Email
}

// Principal is an authenticated participant on one invitation's routes,
// with its agreement's state as of the credential check.
type Principal struct {
	ParticipantID uuid.UUID
	InvitationID  uuid.UUID
	AgreementID   uuid.UUID
	// Version, CurrentRevision, Deadline and OutcomeStatus are the
	// agreement's when the credential was checked: enough for a room ETag.
	Version         int64
	CurrentRevision int
	Deadline        time.Time
	OutcomeStatus   string
	// Kind is the participant's kind, which names its route family.
	Kind string
	// tokenHash is what a write checks again under the agreement's lock.
	tokenHash []byte
}

// credential is the token p authenticated with, for a write to check again.
func (p *Principal) credential() ParticipantCredential {
	return ParticipantCredential{kind: p.Kind, invitationID: p.InvitationID, tokenHash: p.tokenHash}
}

// principalFrom is the principal of a token's owner as its lookup read it.
func principalFrom(o store.TokenOwner, tokenHash []byte) *Principal {
	return &Principal{
		ParticipantID: o.ParticipantID, InvitationID: o.InvitationID, AgreementID: o.AgreementID, Version: o.Version,
		CurrentRevision: o.CurrentRevision, Deadline: o.Deadline, OutcomeStatus: o.OutcomeStatus, Kind: o.Kind, tokenHash: tokenHash,
	}
}

// ParticipantCredential is a Consensus-Participant token presented on one
// invitation's routes in the family of kind, not checked yet; only the
// token's hash is kept. A write checks it under the agreement's lock
// (PostEvent).
type ParticipantCredential struct {
	kind         string
	invitationID uuid.UUID // uuid.Nil for a malformed path id, which no token matches
	tokenHash    []byte
}

// NewParticipantCredential keeps token, presented on the routes of
// invitationID in the family of kind, for a later check.
func NewParticipantCredential(kind, invitationID, token string) ParticipantCredential {
	id, _ := parseID(invitationID)
	return ParticipantCredential{kind: kind, invitationID: id, tokenHash: secret.Hash(token)}
}

// AuthParticipant checks a participant token for the invitation in the
// path of a route of the family of kind: unknown, revoked, another
// invitation's token or a token of the other family is *UnauthorizedError,
// so a token says nothing on the other family's routes; a database failure
// (room.ErrUnavailable) comes back as it is, never as a verdict on the
// token. It is one indexed lookup. A write checks the token again under the
// agreement's lock; a read is answered as of this check.
func (v *Venue) AuthParticipant(ctx context.Context, kind, invitationID, token string) (*Principal, error) {
	return v.authParticipant(ctx, NewParticipantCredential(kind, invitationID, token))
}

// Recheck checks again the credential p was authenticated with, as
// AuthParticipant did (a reader that waited checks it once woken): the
// principal it returns holds the agreement's state as of now.
func (v *Venue) Recheck(ctx context.Context, p *Principal) (*Principal, error) {
	return v.authParticipant(ctx, p.credential())
}

func (v *Venue) authParticipant(ctx context.Context, c ParticipantCredential) (*Principal, error) {
	o, err := v.tokenOwner(ctx, c.tokenHash)
	if err != nil {
		if errors.Is(err, room.ErrNotFound) {
			return nil, &UnauthorizedError{Scheme: SchemeParticipant}
		}
		// The database failed: that is not a bad credential.
		return nil, fmt.Errorf("venue: authenticate participant: %w", err)
	}
	if o.InvitationID != c.invitationID || o.RevokedAt != nil || o.Kind != c.kind || !secret.Equal(o.TokenHash, c.tokenHash) {
		return nil, &UnauthorizedError{Scheme: SchemeParticipant}
	}
	v.rooms().learnAgreement(o.InvitationID, o.AgreementID)
	return principalFrom(o, c.tokenHash), nil
}
