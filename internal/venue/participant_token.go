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
	hash := secret.Hash(token)
	o, err := v.tokenOwner(ctx, hash)
	if err != nil && !errors.Is(err, room.ErrNotFound) {
		// The database failed: that is not a bad credential.
		return nil, fmt.Errorf("venue: authenticate participant: %w", err)
	}
	if err != nil || o.RevokedAt != nil || !secret.Equal(o.TokenHash, hash) {
		return nil, &UnauthorizedError{Scheme: SchemeParticipant}
	}
	return principalFrom(o, hash), nil
}
