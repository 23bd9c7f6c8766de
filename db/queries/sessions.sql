-- name: SessionInsert :exec
INSERT INTO sessions (token_hash, invitation_id, expires_at, created_at, workspace_id)
VALUES ($1, $2, $3, $4, (SELECT workspace_id FROM invitations WHERE id = $2));

-- name: SessionGet :one
SELECT * FROM sessions WHERE token_hash = $1;

-- name: SessionDeleteExpired :execrows
DELETE FROM sessions WHERE expires_at < $1;
