package venue

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/mail"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
)

// slot is one participant an operator invites, checked, with its fresh
// ids and credentials (which exist in clear only until its email is sealed).
type slot struct {
	participant  uuid.UUID
	invitation   uuid.UUID
	email        string
	secret, prof string
	in           ParticipantInput
}

// roomParticipant is the slot as the canonical revision lists it.
func (s slot) roomParticipant() room.Participant {
	return room.Participant{ParticipantID: s.participant.String(), DisplayName: s.in.DisplayName, Kind: s.in.Kind, Required: *s.in.Required}
}

// newSlots checks the participants an operator invites: display name, kind,
// required and an address no one else in the agreement has (taken holds
// the addresses already in it, and is updated). Errors are
// *room.ValidationError naming participants[i].
func newSlots(in []ParticipantInput, taken map[string]bool) ([]slot, error) {
	slots := make([]slot, len(in))
	for i, p := range in {
		field := fmt.Sprintf("participants[%d]", i)
		if err := room.ValidateLine(field+".displayName", p.DisplayName, 1, room.MaxDisplayName); err != nil {
			return nil, err
		}
		if p.Kind != room.KindAgent && p.Kind != room.KindHuman {
			return nil, &room.ValidationError{Field: field + ".kind", Reason: `must be "agent" or "human"`}
		}
		if p.Required == nil {
			return nil, &room.ValidationError{Field: field + ".required", Reason: "is required (true or false)"}
		}
		email, err := room.NormalizeInbox(field+".email", p.Email)
		if err != nil {
			return nil, err
		}
		if taken[email] {
			return nil, &room.ValidationError{Field: field + ".email", Reason: "each participant needs its own address"}
		}
		taken[email] = true
		slots[i] = slot{participant: uuid.New(), invitation: uuid.New(), email: email, secret: secret.NewInviteSecret(), prof: secret.NewEmailProof(), in: p}
	}
	return slots, nil
}

// insertSlot stores s at position with its invitation (expiring with
// locked's deadline) and queues its invitation email for locked, in tx.
func (v *Venue) insertSlot(ctx context.Context, tx *store.Tx, s slot, position int, locked room.Locked, deadline, now time.Time) (CreatedParticipant, error) {
	agreementID, err := uuid.Parse(locked.Revision.AgreementID)
	if err != nil {
		return CreatedParticipant{}, err
	}
	if err := tx.ParticipantInsert(ctx, store.Participant{
		ID: s.participant, AgreementID: agreementID, InvitationID: s.invitation, Position: position, DisplayName: s.in.DisplayName,
		Kind: s.in.Kind, Email: s.email, Required: *s.in.Required,
	}); err != nil {
		return CreatedParticipant{}, err
	}
	if err := tx.InvitationInsert(ctx, store.Invitation{
		ID: s.invitation, ParticipantID: s.participant, AgreementID: agreementID,
		SecretHash: secret.Hash(s.secret), ProofHash: secret.Hash(s.prof), ExpiresAt: deadline, IssuedAt: now,
	}); err != nil {
		return CreatedParticipant{}, err
	}
	env := mail.NewEnvelope(mail.InvitationInput{
		Origin: v.Origin, InvitationID: s.invitation.String(), AgreementID: agreementID.String(),
		ParticipantID: s.participant.String(), Kind: s.in.Kind, DisplayName: s.in.DisplayName, Inbox: s.email,
		Title: locked.Revision.Title, Deadline: locked.Revision.Deadline, RevisionNumber: locked.Revision.Revision,
		RevisionDigest: locked.RevisionDigest, Secret: s.secret, EmailProof: s.prof,
		DecisionRule: locked.Revision.DecisionRule.Words(room.RequiredCount(locked.Revision)),
	})
	if err := v.queueInvitation(ctx, tx, env, s.invitation, agreementID, now); err != nil {
		return CreatedParticipant{}, err
	}
	return CreatedParticipant{
		ParticipantID: s.participant.String(), InvitationID: s.invitation.String(), DisplayName: s.in.DisplayName,
		Kind: s.in.Kind, Email: s.email, Required: *s.in.Required, Delivery: "queued",
	}, nil
}
