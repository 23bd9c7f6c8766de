-- name: SigningKeyRegister :exec
-- Records a service key the first time a replica runs with it.
INSERT INTO signing_keys (kid, public_key, created_at) VALUES ($1, $2, $3)
ON CONFLICT (kid) DO NOTHING;

-- name: SigningKeyList :many
SELECT * FROM signing_keys ORDER BY created_at, kid;

-- name: RecordInsert :exec
-- The first record issued for an agreement wins; a concurrent issue on
-- another replica leaves it alone and reads it back.
INSERT INTO records (agreement_id, body, sha256, kid, issued_at, workspace_id)
VALUES ($1, $2, $3, $4, $5, (SELECT workspace_id FROM agreements WHERE id = $1))
ON CONFLICT (agreement_id) DO NOTHING;

-- name: RecordGet :one
SELECT * FROM records WHERE agreement_id = $1;
