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
