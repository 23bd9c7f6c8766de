-- name: AuditInsert :exec
INSERT INTO audit_entries (workspace_id, seq, id, at, actor_kind, actor_id, actor_name, action, targets,
                           request_id, client_address, result, prev_hash, hash)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14);

-- name: AuditList :many
-- A workspace's entries after seq, oldest first.
SELECT * FROM audit_entries WHERE workspace_id = $1 AND seq > $2 ORDER BY seq LIMIT $3;
