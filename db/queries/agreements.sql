-- name: AgreementInsert :exec
INSERT INTO agreements (id, current_revision, deadline, created_at)
VALUES ($1, 1, $2, $3);

-- name: AgreementGet :one
SELECT * FROM agreements WHERE id = $1;

-- name: AgreementGetForUpdate :one
-- Serializes every write to one agreement across replicas.
SELECT * FROM agreements WHERE id = $1 FOR UPDATE;

-- name: AgreementList :many
-- Newest first; keyset pagination on (created_at, id).
SELECT a.*, r.canonical_json
FROM agreements a
JOIN revisions r ON r.agreement_id = a.id AND r.number = a.current_revision
WHERE (sqlc.narg('before_created')::timestamptz IS NULL
       OR (a.created_at, a.id) < (sqlc.narg('before_created')::timestamptz, sqlc.narg('before_id')::uuid))
ORDER BY a.created_at DESC, a.id DESC
LIMIT $1;

-- name: AgreementSetOutcome :execrows
-- Only a pending outcome ever changes: the first terminal fact wins.
UPDATE agreements
SET outcome_status = $2, outcome_decided_at = $3, outcome_event_id = $4
WHERE id = $1 AND outcome_status = 'pending';
