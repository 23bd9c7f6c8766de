package venue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
)

// Actions are the absolute URLs of the agent routes of one invitation.
type Actions struct {
	Claim    string `json:"claim"`
	Room     string `json:"room"`
	Events   string `json:"events"`
	Artifact string `json:"artifact"`
}

func (v *Venue) actions(invitationID string) Actions {
	u := agentroute.For(v.Origin, invitationID)
	return Actions{Claim: u.Claim, Room: u.Room, Events: u.Events, Artifact: u.Artifact}
}

// ParticipantRef names the slot an invitation is for.
type ParticipantRef struct {
	ParticipantID string `json:"participantId"`
	DisplayName   string `json:"displayName"`
	Kind          string `json:"kind"`
}

// Exchanged is the result of a successful exchange.
type Exchanged struct {
	SessionToken      string          `json:"sessionToken"`
	SessionExpiresAt  string          `json:"sessionExpiresAt"`
	InvitationID      string          `json:"invitationId"`
	AgreementID       string          `json:"agreementId"`
	RevisionNumber    int             `json:"revisionNumber"`
	RevisionDigest    string          `json:"revisionDigest"`
	MarkdownDigest    string          `json:"markdownDigest"`
	CanonicalRevision json.RawMessage `json:"canonicalRevision"`
	Markdown          string          `json:"markdown"`
	Participant       ParticipantRef  `json:"participant"`
	Actions           Actions         `json:"actions"`
}

// liveInvitation loads an invitation usable on the agent routes now: it
// exists, is an agent invitation, is not revoked and its deadline has not
// passed. Every other case is room.ErrNotFound, indistinguishable by design.
func (v *Venue) liveInvitation(ctx context.Context, invitationID string, now time.Time) (store.InvitationDetail, error) {
	id, err := parseID(invitationID)
	if err != nil {
		return store.InvitationDetail{}, err
	}
	inv, err := v.Store.InvitationGet(ctx, id)
	if err != nil {
		return store.InvitationDetail{}, err
	}
	if inv.Kind != room.KindAgent || inv.RevokedAt != nil || !now.Before(inv.ExpiresAt) {
		return store.InvitationDetail{}, room.ErrNotFound
	}
	return inv, nil
}

// Exchange trades the invitation secret for a session of at most 20
// minutes, never beyond the invitation's expiry. It records nothing about
// approval. Unknown id, wrong secret, expired, revoked and wrong kind all
// return room.ErrNotFound.
func (v *Venue) Exchange(ctx context.Context, invitationID, inviteSecret string) (*Exchanged, error) {
	now := canon.Now(v.now())
	inv, err := v.liveInvitation(ctx, invitationID, now)
	if err != nil {
		return nil, err
	}
	if !secret.Equal(secret.Hash(secret.NormalizeInviteSecret(inviteSecret)), inv.SecretHash) {
		return nil, room.ErrNotFound
	}
	rev, err := v.Store.RevisionGet(ctx, inv.AgreementID, inv.CurrentRevision)
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
		MarkdownDigest: rev.MarkdownDigest, CanonicalRevision: json.RawMessage(rev.Canonical), Markdown: rev.Markdown,
		Participant: ParticipantRef{ParticipantID: inv.ParticipantID.String(), DisplayName: inv.DisplayName, Kind: inv.Kind},
		Actions:     v.actions(inv.ID.String()),
	}, nil
}

// ClaimInput is the claim body. Pointers tell a missing field from an empty one.
type ClaimInput struct {
	EmailProof      *string `json:"emailProof"`
	Inbox           *string `json:"inbox"`
	RuntimeEndpoint *string `json:"runtimeEndpoint"`
}

// Claimed is the result of a claim or of its exact replay.
type Claimed struct {
	ParticipantToken  string       `json:"participantToken"`
	ParticipantID     string       `json:"participantId"`
	BindingDigest     string       `json:"bindingDigest"`
	Binding           room.Binding `json:"binding"`
	Assurance         string       `json:"assurance"`
	CountsAsSignature bool         `json:"countsAsSignature"`
	Actions           Actions      `json:"actions"`
}

// SessionGrant is a session token checked for one usable invitation.
type SessionGrant struct {
	inv store.InvitationDetail
}

// AuthSession checks a Consensus-Session token for the invitation in the
// path: unknown, expired or another invitation's session is
// *UnauthorizedError; an invitation no longer usable (revoked, expired,
// human) is room.ErrNotFound.
func (v *Venue) AuthSession(ctx context.Context, invitationID, sessionToken string) (*SessionGrant, error) {
	now := v.now()
	sess, err := v.Store.SessionGet(ctx, secret.Hash(sessionToken))
	if err != nil || sess.InvitationID.String() != invitationID || !now.Before(sess.ExpiresAt) {
		return nil, &UnauthorizedError{Scheme: SchemeSession}
	}
	inv, err := v.liveInvitation(ctx, invitationID, now)
	if err != nil {
		return nil, err
	}
	return &SessionGrant{inv: inv}, nil
}

// Claim binds the slot to the inbox that proves it holds the email proof.
// The participant token is derived from the binding, so an identical claim
// replays the same token; a different claim after the first is
// room.ErrClaimConflict. Errors, in the order checked: *room.ValidationError
// (body), room.ErrProofMismatch, room.ErrClaimConflict.
func (v *Venue) Claim(ctx context.Context, g *SessionGrant, in ClaimInput) (*Claimed, error) {
	now := canon.Now(v.now())
	inv := g.inv
	if in.EmailProof == nil || *in.EmailProof == "" {
		return nil, &room.ValidationError{Field: "emailProof", Reason: "is required: the email_proof from the invitation email"}
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
	proofOK := secret.Equal(secret.Hash(*in.EmailProof), inv.ProofHash)
	if !proofOK || inbox != inv.Email {
		return nil, room.ErrProofMismatch
	}
	rev, err := v.Store.RevisionGet(ctx, inv.AgreementID, inv.CurrentRevision)
	if err != nil {
		return nil, fmt.Errorf("venue: claim: %w", err)
	}
	binding := room.Binding{
		Schema: fmt.Sprintf(room.BindingSchemaFmt, v.Origin), Version: 1, AgreementID: inv.AgreementID.String(),
		InvitationID: inv.ID.String(), ParticipantID: inv.ParticipantID.String(), Inbox: inbox,
		RuntimeEndpoint: in.RuntimeEndpoint, Assurance: room.Assurance, Revision: rev.Number, RevisionDigest: rev.RevisionDigest,
	}
	canonical, digest, err := canon.DigestOf(binding)
	if err != nil {
		return nil, err
	}
	token := v.Keys.ParticipantToken(digest)
	err = v.Store.InTx(ctx, func(tx *store.Tx) error {
		claimed, err := tx.ParticipantClaim(ctx, inv.ParticipantID, store.Claim{
			BindingJSON: string(canonical), BindingDigest: digest, TokenHash: secret.Hash(token), ClaimedAt: now,
		})
		if err != nil || claimed {
			return err
		}
		p, err := tx.ParticipantGet(ctx, inv.ParticipantID)
		if err != nil {
			return err
		}
		if p.BindingDigest != digest {
			return room.ErrClaimConflict
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Claimed{
		ParticipantToken: token, ParticipantID: inv.ParticipantID.String(), BindingDigest: digest, Binding: binding,
		Assurance: room.Assurance, CountsAsSignature: false, Actions: v.actions(inv.ID.String()),
	}, nil
}

// Principal is an authenticated participant on one invitation's routes.
type Principal struct {
	ParticipantID uuid.UUID
	InvitationID  uuid.UUID
	AgreementID   uuid.UUID
}

// AuthParticipant checks a participant token for the invitation in the
// path: unknown, revoked or another invitation's token is *UnauthorizedError.
func (v *Venue) AuthParticipant(ctx context.Context, invitationID, token string) (*Principal, error) {
	unauthorized := &UnauthorizedError{Scheme: SchemeParticipant}
	p, err := v.Store.ParticipantGetByTokenHash(ctx, secret.Hash(token))
	if err != nil || p.InvitationID.String() != invitationID || p.RevokedAt != nil || !secret.Equal(p.TokenHash, secret.Hash(token)) {
		return nil, unauthorized
	}
	return &Principal{ParticipantID: p.ID, InvitationID: p.InvitationID, AgreementID: p.AgreementID}, nil
}
