package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// Invitation is one participant's invitation. Its secret and email proof are
// stored only as SHA-256 hashes; a resend replaces both.
type Invitation struct {
	ID            uuid.UUID
	ParticipantID uuid.UUID
	AgreementID   uuid.UUID
	SecretHash    []byte
	ProofHash     []byte
	ExpiresAt     time.Time
	IssuedAt      time.Time
}

// InvitationDetail is an invitation with its participant's slot and its
// agreement's current revision and deadline: everything the agent routes
// judge an invitation by, in one read.
type InvitationDetail struct {
	Invitation
	Kind          string
	DisplayName   string
	Email         string
	Required      bool
	RevokedAt     *time.Time
	BindingJSON   string
	BindingDigest string
	// CurrentRevision and Deadline are the agreement's.
	CurrentRevision int
	Deadline        time.Time
}

func invitationFrom(r dbsqlc.Invitation) Invitation {
	return Invitation{ID: r.ID, ParticipantID: r.ParticipantID, AgreementID: r.AgreementID, SecretHash: r.SecretHash,
		ProofHash: r.ProofHash, ExpiresAt: r.ExpiresAt, IssuedAt: r.IssuedAt}
}

// InvitationInsert stores a new invitation. A participant that already has
// one is room.ErrConflict.
func (q queries) InvitationInsert(ctx context.Context, inv Invitation) error {
	err := q.q.InvitationInsert(ctx, dbsqlc.InvitationInsertParams{
		ID: inv.ID, ParticipantID: inv.ParticipantID, AgreementID: inv.AgreementID, SecretHash: inv.SecretHash,
		ProofHash: inv.ProofHash, ExpiresAt: inv.ExpiresAt, IssuedAt: inv.IssuedAt,
	})
	return interpretError("insert invitation", err)
}

// InvitationGet reads an invitation with its slot and agreement, or
// room.ErrNotFound.
func (q queries) InvitationGet(ctx context.Context, id uuid.UUID) (InvitationDetail, error) {
	r, err := q.q.InvitationGet(ctx, id)
	if err != nil {
		return InvitationDetail{}, interpretError("get invitation", err)
	}
	return InvitationDetail{
		Invitation: invitationFrom(dbsqlc.Invitation{ID: r.ID, ParticipantID: r.ParticipantID, AgreementID: r.AgreementID,
			SecretHash: r.SecretHash, ProofHash: r.ProofHash, ExpiresAt: r.ExpiresAt, IssuedAt: r.IssuedAt}),
		Kind: r.Kind, DisplayName: r.DisplayName, Email: r.Email, Required: r.Required, RevokedAt: r.RevokedAt,
		BindingJSON: deref(r.BindingJson), BindingDigest: deref(r.BindingDigest),
		CurrentRevision: int(r.CurrentRevision), Deadline: r.Deadline,
	}, nil
}

// InvitationRotate replaces the invitation's secret and proof hashes: the
// previous email stops working.
func (q queries) InvitationRotate(ctx context.Context, id uuid.UUID, secretHash, proofHash []byte, issuedAt time.Time) error {
	err := q.q.InvitationRotate(ctx, dbsqlc.InvitationRotateParams{ID: id, SecretHash: secretHash, ProofHash: proofHash, IssuedAt: issuedAt})
	return interpretError("rotate invitation", err)
}

// InvitationListByAgreement returns every invitation of an agreement.
func (q queries) InvitationListByAgreement(ctx context.Context, agreementID uuid.UUID) ([]Invitation, error) {
	rows, err := q.q.InvitationListByAgreement(ctx, agreementID)
	if err != nil {
		return nil, interpretError("list invitations", err)
	}
	return convert(rows, invitationFrom), nil
}
