package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
	"github.com/consensus-md/consensus/internal/workspace"
)

// APIKey is an API key of the operator API, without its token: only the
// token's SHA-256 is stored.
type APIKey struct {
	ID          uuid.UUID
	WorkspaceID uuid.UUID
	Name        string
	TokenHash   []byte
	Scopes      []workspace.Scope
	CreatedAt   time.Time
	ExpiresAt   *time.Time
	RevokedAt   *time.Time
	LastUsedAt  *time.Time
	// CreatedBy is who made the key: its Kind, and for a key or an
	// operator its ID.
	CreatedBy workspace.Actor
}

func apiKeyFrom(r dbsqlc.ApiKey) APIKey {
	k := APIKey{ID: r.ID, WorkspaceID: r.WorkspaceID, Name: r.Name, TokenHash: r.TokenHash, CreatedAt: r.CreatedAt,
		ExpiresAt: r.ExpiresAt, RevokedAt: r.RevokedAt, LastUsedAt: r.LastUsedAt, CreatedBy: workspace.Actor{Kind: r.CreatedByKind}}
	if r.CreatedByID.Valid {
		k.CreatedBy.ID = r.CreatedByID.UUID.String()
	}
	for _, s := range r.Scopes {
		k.Scopes = append(k.Scopes, workspace.Scope(s))
	}
	return k
}

// APIKeyInsert stores a new key. CreatedBy.ID must be empty or a UUID.
func (q queries) APIKeyInsert(ctx context.Context, k APIKey) error {
	scopes := make([]string, len(k.Scopes))
	for i, s := range k.Scopes {
		scopes[i] = string(s)
	}
	var by uuid.NullUUID
	if k.CreatedBy.ID != "" {
		id, err := uuid.Parse(k.CreatedBy.ID)
		if err != nil {
			return err
		}
		by = uuid.NullUUID{UUID: id, Valid: true}
	}
	err := q.q.APIKeyInsert(ctx, dbsqlc.APIKeyInsertParams{ID: k.ID, WorkspaceID: k.WorkspaceID, Name: k.Name, TokenHash: k.TokenHash,
		Scopes: scopes, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, CreatedByKind: k.CreatedBy.Kind, CreatedByID: by})
	return interpretError("insert api key", err)
}

// APIKeyGetByTokenHash finds the key of a token by the token's hash, in any
// workspace (on the store's pool, before the request's workspace is
// known), or room.ErrNotFound. Revoked and expired keys are returned too:
// the caller says which.
func (q queries) APIKeyGetByTokenHash(ctx context.Context, tokenHash []byte) (APIKey, error) {
	r, err := q.q.APIKeyGetByTokenHash(ctx, tokenHash)
	if err != nil {
		return APIKey{}, interpretError("get api key", err)
	}
	return apiKeyFrom(r), nil
}

// APIKeyList returns a workspace's keys, revoked ones included, oldest first.
func (q queries) APIKeyList(ctx context.Context, workspaceID uuid.UUID) ([]APIKey, error) {
	rows, err := q.q.APIKeyList(ctx, workspaceID)
	if err != nil {
		return nil, interpretError("list api keys", err)
	}
	out := make([]APIKey, len(rows))
	for i, r := range rows {
		out[i] = apiKeyFrom(r)
	}
	return out, nil
}

// APIKeyRevoke revokes a workspace's key at now (a second revocation keeps
// the first time) and returns it, or room.ErrNotFound.
func (q queries) APIKeyRevoke(ctx context.Context, workspaceID, id uuid.UUID, now time.Time) (APIKey, error) {
	r, err := q.q.APIKeyRevoke(ctx, dbsqlc.APIKeyRevokeParams{WorkspaceID: workspaceID, ID: id, RevokedAt: &now})
	if err != nil {
		return APIKey{}, interpretError("revoke api key", err)
	}
	return apiKeyFrom(r), nil
}

// APIKeyTouch records that a key was used at now, unless its recorded use
// is less than a minute older: a key's use costs at most one write a
// minute, whichever replicas serve it.
func (q queries) APIKeyTouch(ctx context.Context, id uuid.UUID, now time.Time) error {
	_, err := q.q.APIKeyTouch(ctx, dbsqlc.APIKeyTouchParams{ID: id, Column2: now})
	return interpretError("touch api key", err)
}
