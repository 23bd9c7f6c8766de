package venue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/workspace"
)

// Errors of an operator credential that names a key which no longer works.
// Each says which, so an operator knows whether to ask for a new key or
// to look into a revocation.
var (
	ErrKeyRevoked = errors.New("this API key was revoked")
	ErrKeyExpired = errors.New("this API key has expired")
)

// ErrInsufficientScope: the credential lacks a scope the request needs.
// Every *ScopeError matches it with errors.Is.
var ErrInsufficientScope = errors.New("the credential lacks a scope this request needs")

// ScopeError names the scopes a request needs that its credential lacks.
type ScopeError struct{ Missing []workspace.Scope }

// Error names the missing scopes.
func (e *ScopeError) Error() string {
	names := make([]string, len(e.Missing))
	for i, s := range e.Missing {
		names[i] = string(s)
	}
	return "this request needs the scope " + strings.Join(names, ", ") + ", which the credential does not hold"
}

// Is reports whether target is ErrInsufficientScope.
func (e *ScopeError) Is(target error) bool { return target == ErrInsufficientScope }

// AuthKey resolves a cok_ API key to its principal. An unknown token is
// ErrUnauthorized. A revoked or expired key is ErrKeyRevoked or
// ErrKeyExpired, returned with the key's principal so that the refusal can
// be recorded in its workspace's audit log. A key's use is written at most
// once a minute (store.APIKeyTouch), never once per request.
func (v *Venue) AuthKey(ctx context.Context, token string) (workspace.Principal, error) {
	if !strings.HasPrefix(token, secret.PrefixKey) {
		return workspace.Principal{}, ErrUnauthorized
	}
	hash := secret.Hash(token)
	k, err := v.Store.APIKeyGetByTokenHash(ctx, hash)
	if errors.Is(err, room.ErrNotFound) {
		return workspace.Principal{}, ErrUnauthorized
	}
	if err != nil {
		return workspace.Principal{}, err
	}
	if !secret.Equal(hash, k.TokenHash) {
		return workspace.Principal{}, ErrUnauthorized
	}
	p := workspace.Principal{WorkspaceID: k.WorkspaceID, Actor: workspace.Actor{Kind: workspace.ActorKey, ID: k.ID.String(), Name: k.Name}, Scopes: k.Scopes}
	now := v.now()
	switch {
	case k.RevokedAt != nil:
		return p, ErrKeyRevoked
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		return p, ErrKeyExpired
	}
	if k.LastUsedAt == nil || now.Sub(*k.LastUsedAt) >= time.Minute {
		if err := v.Store.APIKeyTouch(ctx, k.ID, canon.Now(now)); err != nil {
			return workspace.Principal{}, err
		}
	}
	return p, nil
}

// KeyInput is the body of a key's creation.
type KeyInput struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
	// ExpiresAt is an RFC 3339 instant in whole seconds, in the future;
	// absent or null, the key does not expire.
	ExpiresAt *string `json:"expiresAt"`
}

// Key is an API key as the operator API shows it: never its token.
type Key struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Scopes     []string  `json:"scopes"`
	CreatedAt  string    `json:"createdAt"`
	ExpiresAt  *string   `json:"expiresAt"`
	LastUsedAt *string   `json:"lastUsedAt"`
	RevokedAt  *string   `json:"revokedAt"`
	CreatedBy  KeyAuthor `json:"createdBy"`
}

// KeyAuthor is who created a key: kind bootstrap, key, operator or cli,
// and the key's or operator's id (null for the others).
type KeyAuthor struct {
	Kind string  `json:"kind"`
	ID   *string `json:"id"`
}

// CreatedKey is a new key with its token, which is shown this once.
type CreatedKey struct {
	Key
	Token string `json:"token"`
}

// KeyList is a workspace's keys, revoked ones included, oldest first.
type KeyList struct {
	Keys []Key `json:"keys"`
}

func keyView(k store.APIKey) Key {
	out := Key{ID: k.ID.String(), Name: k.Name, Scopes: []string{}, CreatedAt: canon.FormatTime(k.CreatedAt), CreatedBy: KeyAuthor{Kind: k.CreatedBy.Kind}}
	for _, s := range k.Scopes {
		out.Scopes = append(out.Scopes, string(s))
	}
	if k.CreatedBy.ID != "" {
		out.CreatedBy.ID = ptr(k.CreatedBy.ID)
	}
	if k.ExpiresAt != nil {
		out.ExpiresAt = ptr(canon.FormatSeconds(*k.ExpiresAt))
	}
	if k.LastUsedAt != nil {
		out.LastUsedAt = ptr(canon.FormatTime(*k.LastUsedAt))
	}
	if k.RevokedAt != nil {
		out.RevokedAt = ptr(canon.FormatTime(*k.RevokedAt))
	}
	return out
}

// parseKeyInput checks a key's name, scopes and expiry.
func parseKeyInput(in KeyInput, now time.Time) (name string, scopes []workspace.Scope, expires *time.Time, err error) {
	if err := room.ValidateLine("name", in.Name, 1, 100); err != nil {
		return "", nil, nil, err
	}
	if len(in.Scopes) == 0 {
		return "", nil, nil, &room.ValidationError{Field: "scopes", Reason: "must name at least one scope"}
	}
	for _, s := range in.Scopes {
		sc, err := workspace.ParseScope(s)
		if err != nil {
			return "", nil, nil, &room.ValidationError{Field: "scopes", Reason: err.Error()}
		}
		scopes = append(scopes, sc)
	}
	if in.ExpiresAt != nil {
		t, err := room.ParseDeadline(*in.ExpiresAt, now)
		if err != nil {
			var ve *room.ValidationError
			if errors.As(err, &ve) {
				ve.Field = "expiresAt"
			}
			return "", nil, nil, err
		}
		expires = &t
	}
	return in.Name, workspace.Normalize(scopes), expires, nil
}

// CreateKey creates an API key in the call's workspace and returns it
// with its token, shown this once. A key never holds a scope its creator
// lacks: asking for one is *ScopeError. Errors: *room.ValidationError.
func (v *Venue) CreateKey(ctx context.Context, c OperatorCall, in KeyInput) (*CreatedKey, error) {
	now := canon.Now(v.now())
	name, scopes, expires, err := parseKeyInput(in, now)
	if err != nil {
		return nil, err
	}
	if missing := c.Missing(scopes); len(missing) > 0 {
		return nil, &ScopeError{Missing: missing}
	}
	token := secret.NewAPIKey()
	k := store.APIKey{ID: uuid.New(), WorkspaceID: c.WorkspaceID, Name: name, TokenHash: secret.Hash(token), Scopes: scopes,
		CreatedAt: now, ExpiresAt: expires, CreatedBy: workspace.Actor{Kind: c.Actor.Kind, ID: c.Actor.ID}}
	err = v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		if err := tx.APIKeyInsert(ctx, k); err != nil {
			return err
		}
		return v.audited(ctx, tx, c, ActionKeyCreate, map[string]string{"keyId": k.ID.String()})
	})
	if err != nil {
		return nil, fmt.Errorf("venue: create key: %w", err)
	}
	return &CreatedKey{Key: keyView(k), Token: token}, nil
}

// ListKeys returns the call's workspace's keys, never their tokens.
func (v *Venue) ListKeys(ctx context.Context, c OperatorCall) (*KeyList, error) {
	var keys []store.APIKey
	err := v.inWorkspace(ctx, c, func(tx *store.Tx) (err error) {
		keys, err = tx.APIKeyList(ctx, c.WorkspaceID)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &KeyList{Keys: []Key{}}
	for _, k := range keys {
		out.Keys = append(out.Keys, keyView(k))
	}
	return out, nil
}

// RevokeKey revokes a key of the call's workspace at once: its next use,
// on any replica, is refused. Revoking twice keeps the first time. Errors:
// room.ErrNotFound (also for another workspace's key).
func (v *Venue) RevokeKey(ctx context.Context, c OperatorCall, keyID string) (*Key, error) {
	id, err := parseID(keyID)
	if err != nil {
		return nil, err
	}
	var k store.APIKey
	err = v.inWorkspace(ctx, c, func(tx *store.Tx) (err error) {
		if k, err = tx.APIKeyRevoke(ctx, c.WorkspaceID, id, canon.Now(v.now())); err != nil {
			return err
		}
		return v.audited(ctx, tx, c, ActionKeyRevoke, map[string]string{"keyId": id.String()})
	})
	if err != nil {
		return nil, err
	}
	out := keyView(k)
	return &out, nil
}
