-- name: OperatorInsert :exec
INSERT INTO operators (id, workspace_id, email, role, created_at) VALUES ($1, $2, $3, $4, $5);

-- name: OperatorList :many
SELECT * FROM operators WHERE workspace_id = $1 AND removed_at IS NULL ORDER BY created_at, id;
