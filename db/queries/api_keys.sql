-- name: APIKeyInsert :exec
INSERT INTO api_keys (id, workspace_id, name, token_hash, scopes, created_at, expires_at, created_by_kind, created_by_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9);

-- name: APIKeyGetByTokenHash :one
-- The key a bearer token names, in any workspace: what authenticates an
-- operator request before its workspace is known.
SELECT * FROM api_keys WHERE token_hash = $1;

-- name: APIKeyList :many
SELECT * FROM api_keys WHERE workspace_id = $1 ORDER BY created_at, id;

-- name: APIKeyGet :one
SELECT * FROM api_keys WHERE workspace_id = $1 AND id = $2;

-- name: APIKeyRevoke :one
-- Revokes a key; revoking it again keeps the first time.
UPDATE api_keys SET revoked_at = coalesce(revoked_at, $3)
WHERE workspace_id = $1 AND id = $2
RETURNING *;

-- name: APIKeyTouch :execrows
-- Records a key's use at most once a minute, whichever replica sees it.
UPDATE api_keys SET last_used_at = $2::timestamptz
WHERE id = $1 AND (last_used_at IS NULL OR last_used_at <= $2::timestamptz - interval '1 minute');
