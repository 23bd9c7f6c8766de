-- name: AgreementInsert :exec
-- A new agreement belongs to the workspace of the operator transaction
-- that creates it; outside one the setting is unset and the insert fails.
-- Its reminders (latest first) begin at remind_from, the first of them.
INSERT INTO agreements (id, current_revision, deadline, created_at, workspace_id, reminders, remind_from)
VALUES ($1, 1, $2, $3, current_setting('consensus.workspace_id')::uuid, $4, $5);

-- name: AgreementSetReminders :exec
-- The reminder times of a new agreement, when its request named them,
-- latest first, and remind_from, the first of them (none: NULL, never).
UPDATE agreements SET reminders = $2, remind_from = $3 WHERE id = $1;

-- name: AgreementGet :one
SELECT * FROM agreements WHERE id = $1;

-- name: AgreementGetForUpdate :one
-- Serializes every write to one agreement across replicas.
SELECT * FROM agreements WHERE id = $1 FOR UPDATE;

-- name: AgreementLockBatch :many
-- Locks the agreements of the appends of one AppendMany, skipping any
-- that another transaction holds: such an append is left out, to run
-- alone and wait.
-- Never waiting, it cannot take part in a deadlock.
SELECT * FROM agreements WHERE id = ANY(@ids::uuid[]) FOR UPDATE SKIP LOCKED;

-- name: AgreementList :many
-- The agreements of the transaction's workspace, newest first; keyset
-- pagination on (created_at, id).
SELECT a.*, r.canonical_json
FROM agreements a
JOIN revisions r ON r.agreement_id = a.id AND r.number = a.current_revision
WHERE a.workspace_id = current_setting('consensus.workspace_id')::uuid
  AND (sqlc.narg('before_created')::timestamptz IS NULL
       OR (a.created_at, a.id) < (sqlc.narg('before_created')::timestamptz, sqlc.narg('before_id')::uuid))
ORDER BY a.created_at DESC, a.id DESC
LIMIT $1;

-- name: AgreementSetOutcome :execrows
-- Only a pending outcome ever changes: the first terminal fact wins. The
-- change is a new version of the room.
UPDATE agreements
SET outcome_status = $2, outcome_decided_at = $3, outcome_event_id = $4, version = version + 1
WHERE id = $1 AND outcome_status = 'pending';

-- name: AgreementExpireDue :many
-- Settles every room whose deadline passed while pending as expired at its
-- deadline, a new version of each. A decision that holds the agreement's
-- lock commits first, and then the row is no longer pending.
UPDATE agreements
SET outcome_status = 'expired', outcome_decided_at = deadline, outcome_event_id = NULL, version = version + 1
WHERE outcome_status = 'pending' AND deadline <= $1
RETURNING id, webhooks_registered;

-- name: AgreementLockByParticipant :one
-- Locks the agreement of a participant, as AgreementGetForUpdate does.
SELECT a.* FROM agreements a JOIN participants p ON p.agreement_id = a.id
WHERE p.id = $1
FOR UPDATE OF a;

-- name: AgreementBump :exec
-- A change the room shows that is not an event or an outcome (a claim, a
-- revocation): a new version, so ETags and waiting readers see it.
UPDATE agreements SET version = version + 1 WHERE id = $1;

-- name: AgreementLockByToken :one
-- Locks the agreement of a participant token's owner, as
-- AgreementGetForUpdate does. Nothing else this statement reads of the
-- participant is fresh after a wait for the lock: read it again.
SELECT a.* FROM agreements a JOIN participants p ON p.agreement_id = a.id
WHERE p.token_hash = $1
FOR UPDATE OF a;

-- name: AgreementAmend :execrows
-- Makes revision number current with its deadline, while the outcome is
-- pending: a new version of the room. The caller holds the lock.
UPDATE agreements SET current_revision = $2, deadline = sqlc.arg(deadline)::timestamptz, version = version + 1,
    remind_from = sqlc.arg(deadline)::timestamptz - make_interval(secs => reminders[1])
WHERE id = $1 AND outcome_status = 'pending';
