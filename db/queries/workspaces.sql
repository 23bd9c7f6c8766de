-- name: WorkspaceInsert :exec
INSERT INTO workspaces (id, name, created_at) VALUES ($1, $2, $3);

-- name: WorkspaceGet :one
SELECT id, name, created_at FROM workspaces WHERE id = $1;

-- name: WorkspaceGetByName :one
SELECT id, name, created_at FROM workspaces WHERE name = $1;

-- name: WorkspaceAuditHead :one
-- Locks the workspace's audit chain head until the transaction ends: the
-- entries of one workspace are appended one at a time, across replicas.
-- FOR NO KEY UPDATE leaves the row free for foreign-key checks.
SELECT audit_head_seq, audit_head_hash FROM workspaces WHERE id = $1 FOR NO KEY UPDATE;

-- name: WorkspaceAuditAdvance :exec
UPDATE workspaces SET audit_head_seq = $2, audit_head_hash = $3 WHERE id = $1;

-- name: WorkspaceList :many
-- Every workspace with its counts, oldest first, for consensusd workspace list.
SELECT w.id, w.name, w.created_at,
       (SELECT count(*) FROM operators o WHERE o.workspace_id = w.id AND o.removed_at IS NULL)::bigint AS operators,
       (SELECT count(*) FROM agreements a WHERE a.workspace_id = w.id)::bigint AS agreements
FROM workspaces w ORDER BY w.created_at, w.id;
