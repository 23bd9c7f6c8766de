package venue

import (
	"context"
	"errors"
	"fmt"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
)

// AuthParticipantToken checks a participant token on a route that names no
// invitation (/mcp): the token alone names its participant, invitation and
// agreement. Unknown or revoked is *UnauthorizedError, as AuthParticipant
// answers on the invitation routes. It reads the participant's row on
// every call, so a revocation takes effect on the next request.
func (v *Venue) AuthParticipantToken(ctx context.Context, token string) (*Principal, error) {
	p, err := v.Store.ParticipantGetByTokenHash(ctx, secret.Hash(token))
	if err != nil && !errors.Is(err, room.ErrNotFound) {
		// The database failed: that is not a bad credential (R-SEC-7).
		return nil, fmt.Errorf("venue: authenticate participant: %w", err)
	}
	if err != nil || p.RevokedAt != nil || !secret.Equal(p.TokenHash, secret.Hash(token)) {
		return nil, &UnauthorizedError{Scheme: SchemeParticipant}
	}
	v.rooms().learnAgreement(p.InvitationID, p.AgreementID)
	return &Principal{
		ParticipantID: p.ParticipantID, InvitationID: p.InvitationID, AgreementID: p.AgreementID, Version: p.Version,
		CurrentRevision: p.CurrentRevision, Deadline: p.Deadline, OutcomeStatus: p.OutcomeStatus,
		credential: ParticipantCredential{invitationID: p.InvitationID, tokenHash: secret.Hash(token)},
	}, nil
}

// Credential is the token p was authenticated with, for a write that must
// check it again under the agreement's lock (PostEvent): a participant
// revoked since this check is refused there.
func (p *Principal) Credential() ParticipantCredential { return p.credential }
