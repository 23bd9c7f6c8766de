package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// Session is a short-lived session for one invitation, stored by the hash of
// its token.
type Session struct {
	TokenHash    []byte
	InvitationID uuid.UUID
	ExpiresAt    time.Time
	CreatedAt    time.Time
}

// SessionInsert stores a new session. A token hash in use is
// room.ErrConflict.
func (q queries) SessionInsert(ctx context.Context, s Session) error {
	err := q.q.SessionInsert(ctx, dbsqlc.SessionInsertParams{TokenHash: s.TokenHash, InvitationID: s.InvitationID, ExpiresAt: s.ExpiresAt, CreatedAt: s.CreatedAt})
	return interpretError("insert session", err)
}

// SessionGet reads a session by its token's hash, or room.ErrNotFound. It
// does not check expiry.
func (q queries) SessionGet(ctx context.Context, tokenHash []byte) (Session, error) {
	r, err := q.q.SessionGet(ctx, tokenHash)
	if err != nil {
		return Session{}, interpretError("get session", err)
	}
	return Session{TokenHash: r.TokenHash, InvitationID: r.InvitationID, ExpiresAt: r.ExpiresAt, CreatedAt: r.CreatedAt}, nil
}

// SessionDeleteExpired deletes the sessions that expired before now and
// returns how many.
func (q queries) SessionDeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	n, err := q.q.SessionDeleteExpired(ctx, now)
	return n, interpretError("delete expired sessions", err)
}
