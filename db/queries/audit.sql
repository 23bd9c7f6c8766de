-- name: AuditInsert :exec
INSERT INTO audit_entries (workspace_id, seq, id, at, actor_kind, actor_id, actor_name, action, targets,
                           request_id, client_address, result, prev_hash, hash)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14);

-- name: AuditList :many
-- A workspace's entries after seq, oldest first.
SELECT * FROM audit_entries WHERE workspace_id = $1 AND seq > $2 ORDER BY seq LIMIT $3;

-- name: AuditSearch :many
-- A workspace's entries after seq, oldest first, that match every filter
-- given (a null filter matches all): the actor by id, or by a piece of its
-- name in any case; the action exactly; the agreement among the targets.
SELECT * FROM audit_entries
WHERE workspace_id = @workspace_id AND seq > @after_seq
  AND (sqlc.narg('actor')::text IS NULL OR actor_id = sqlc.narg('actor') OR strpos(lower(actor_name), lower(sqlc.narg('actor'))) > 0)
  AND (sqlc.narg('action')::text IS NULL OR action = sqlc.narg('action'))
  AND (sqlc.narg('agreement_id')::text IS NULL OR targets->>'agreementId' = sqlc.narg('agreement_id'))
ORDER BY seq
LIMIT @row_limit;

-- name: AuditSearchNewest :many
-- AuditSearch newest first, before seq.
SELECT * FROM audit_entries
WHERE workspace_id = @workspace_id AND seq < @before_seq
  AND (sqlc.narg('actor')::text IS NULL OR actor_id = sqlc.narg('actor') OR strpos(lower(actor_name), lower(sqlc.narg('actor'))) > 0)
  AND (sqlc.narg('action')::text IS NULL OR action = sqlc.narg('action'))
  AND (sqlc.narg('agreement_id')::text IS NULL OR targets->>'agreementId' = sqlc.narg('agreement_id'))
ORDER BY seq DESC
LIMIT @row_limit;
