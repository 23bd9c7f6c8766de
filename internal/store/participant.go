package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// Participant is one slot of an agreement's roster.
type Participant struct {
	ID          uuid.UUID
	AgreementID uuid.UUID
	// InvitationID is the slot's invitation, fixed at creation.
	InvitationID uuid.UUID
	Position     int
	DisplayName  string
	Kind         string
	Email        string
	Required     bool
	// State is invited, claimed or decided.
	State string
	// BindingJSON and BindingDigest are empty until the first claim fixes
	// the participant-binding/v1 object; TokenHash is nil until then.
	BindingJSON   string
	BindingDigest string
	TokenHash     []byte
	ClaimedAt     *time.Time
	RevokedAt     *time.Time
	// PublicKey is the key the claim bound (participant-binding/v2), nil
	// without one.
	PublicKey []byte
}

// Member is the participant as the decision rule sees it.
func (p Participant) Member() room.Member {
	return room.Member{ID: p.ID.String(), Required: p.Required}
}

// TokenOwner is the participant a participant token was issued to, with
// the invitation it was claimed through and its agreement's state: what
// every participant route needs, from one indexed lookup.
type TokenOwner struct {
	ParticipantID uuid.UUID
	AgreementID   uuid.UUID
	InvitationID  uuid.UUID
	TokenHash     []byte
	RevokedAt     *time.Time
	// Kind is the participant's kind (agent or human).
	Kind string
	// Version, CurrentRevision, Deadline and OutcomeStatus are the
	// agreement's as of the lookup.
	Version         int64
	CurrentRevision int
	Deadline        time.Time
	OutcomeStatus   string
}

// Claim is what the first claim of a slot fixes: the canonical binding, its
// digest and the hash of the participant token derived from it.
type Claim struct {
	BindingJSON   string
	BindingDigest string
	TokenHash     []byte
	ClaimedAt     time.Time
	// PublicKey is the Ed25519 key a keyed claim binds (32 bytes), nil
	// for a claim without one.
	PublicKey []byte
}

func participantFrom(r dbsqlc.Participant) Participant {
	return Participant{
		ID: r.ID, AgreementID: r.AgreementID, InvitationID: r.InvitationID, Position: int(r.Position), DisplayName: r.DisplayName, Kind: r.Kind,
		Email: r.Email, Required: r.Required, State: r.State, BindingJSON: deref(r.BindingJson),
		BindingDigest: deref(r.BindingDigest), TokenHash: r.TokenHash, ClaimedAt: r.ClaimedAt, RevokedAt: r.RevokedAt,
		PublicKey: r.PublicKey,
	}
}

// ParticipantInsert stores a new, invited slot from p's ID, AgreementID,
// InvitationID, Position, DisplayName, Kind, Email and Required; the other
// fields start empty. A taken position is room.ErrConflict. The invitation
// must be inserted in the same transaction (the reference is checked at
// commit).
func (q queries) ParticipantInsert(ctx context.Context, p Participant) error {
	err := q.q.ParticipantInsert(ctx, dbsqlc.ParticipantInsertParams{
		ID: p.ID, AgreementID: p.AgreementID, Position: int32(p.Position), DisplayName: p.DisplayName,
		Kind: p.Kind, Email: p.Email, Required: p.Required, InvitationID: p.InvitationID,
	})
	return interpretError("insert participant", err)
}

// ParticipantGet reads one participant, or room.ErrNotFound.
func (q queries) ParticipantGet(ctx context.Context, id uuid.UUID) (Participant, error) {
	r, err := q.q.ParticipantGet(ctx, id)
	if err != nil {
		return Participant{}, interpretError("get participant", err)
	}
	return participantFrom(r), nil
}

// ParticipantListByAgreement returns the roster in position order.
func (q queries) ParticipantListByAgreement(ctx context.Context, agreementID uuid.UUID) ([]Participant, error) {
	rows, err := q.q.ParticipantListByAgreement(ctx, agreementID)
	if err != nil {
		return nil, interpretError("list participants", err)
	}
	return convert(rows, participantFrom), nil
}

// ParticipantClaim fixes c on a slot no claim has bound yet and reports
// whether it did; false means an earlier claim fixed its own binding, which
// the caller compares. A token hash already in use is room.ErrConflict.
func (q queries) ParticipantClaim(ctx context.Context, id uuid.UUID, c Claim) (bool, error) {
	n, err := q.q.ParticipantClaim(ctx, dbsqlc.ParticipantClaimParams{
		ID: id, BindingJson: &c.BindingJSON, BindingDigest: &c.BindingDigest, TokenHash: c.TokenHash, ClaimedAt: &c.ClaimedAt,
		PublicKey: c.PublicKey,
	})
	if err != nil {
		return false, interpretError("claim participant", err)
	}
	return n == 1, nil
}

// ParticipantRevoke marks the participant revoked at at, keeping an earlier
// revocation's time, and returns it; room.ErrNotFound if it does not exist.
func (q queries) ParticipantRevoke(ctx context.Context, id uuid.UUID, at time.Time) (Participant, error) {
	r, err := q.q.ParticipantRevoke(ctx, dbsqlc.ParticipantRevokeParams{ID: id, RevokedAt: &at})
	if err != nil {
		return Participant{}, interpretError("revoke participant", err)
	}
	return participantFrom(r), nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// convert maps generated rows to store types; the result is never nil, so
// an empty list serializes as [].
func convert[R, T any](rows []R, f func(R) T) []T {
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = f(r)
	}
	return out
}
