-- name: OperatorGet :one
SELECT * FROM operators WHERE id = $1;

-- name: OperatorInsertNamed :exec
INSERT INTO operators (id, workspace_id, email, role, created_at, display_name) VALUES ($1, $2, $3, $4, $5, $6);

-- name: OperatorListAll :many
-- A workspace's operators, removed ones included, oldest first.
SELECT * FROM operators WHERE workspace_id = $1 ORDER BY created_at, id;

-- name: OperatorSetRole :one
UPDATE operators SET role = $3 WHERE workspace_id = $1 AND id = $2 AND removed_at IS NULL RETURNING *;

-- name: OperatorSetName :exec
UPDATE operators SET display_name = $2 WHERE id = $1 AND removed_at IS NULL;

-- name: OperatorRemove :one
UPDATE operators SET removed_at = $3 WHERE workspace_id = $1 AND id = $2 AND removed_at IS NULL RETURNING *;

-- name: WorkspaceLockOwners :exec
-- The same lock as WorkspaceAuditHead's, taken before the owners are
-- counted: changes to one workspace's owners count one after another.
SELECT 1 FROM workspaces WHERE id = $1 FOR NO KEY UPDATE;

-- name: OperatorOwnerCount :one
SELECT count(*) FROM operators WHERE workspace_id = $1 AND role = 'owner' AND removed_at IS NULL;

-- name: EnrollmentInsert :exec
INSERT INTO operator_enrollments (id, workspace_id, operator_id, token_hash, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6);

-- name: EnrollmentGetByTokenHash :one
SELECT * FROM operator_enrollments WHERE token_hash = $1;

-- name: EnrollmentUse :execrows
-- Uses a link once: a second use, or one past its expiry, changes nothing.
UPDATE operator_enrollments SET used_at = $2 WHERE id = $1 AND used_at IS NULL AND withdrawn_at IS NULL AND expires_at > $2;

-- name: EnrollmentRevokeForOperator :exec
-- A removed operator's unused links stop working, and their emails not
-- sent yet are dropped with their bodies.
WITH revoked AS (
    UPDATE operator_enrollments SET used_at = $2 WHERE operator_id = $1 AND used_at IS NULL RETURNING id
)
UPDATE outbox SET state = 'failed', sealed_body = NULL, last_reply = 'the operator was removed'
WHERE id IN (SELECT id FROM revoked) AND kind = 'enrollment' AND state IN ('queued', 'retrying');

-- name: EnrollmentWithdrawForOperator :one
-- An operator's unused links stop working when a new one is issued; their
-- emails not sent yet are dropped with their bodies.
WITH withdrawn AS (
    UPDATE operator_enrollments SET withdrawn_at = @withdrawn_at WHERE operator_id = @operator_id AND used_at IS NULL AND withdrawn_at IS NULL RETURNING id
), dropped AS (
    UPDATE outbox SET state = 'failed', sealed_body = NULL, last_reply = 'a newer link replaced it'
    WHERE id IN (SELECT id FROM withdrawn) AND kind = 'enrollment' AND state IN ('queued', 'retrying')
)
SELECT count(*) FROM withdrawn;

-- name: EnrollmentLatest :many
-- Each operator's newest link, for the operators' page, with the delivery
-- state of its email (empty when it was not emailed).
SELECT DISTINCT ON (e.operator_id) sqlc.embed(e), coalesce(o.state, '')::text AS email_state
FROM operator_enrollments e
LEFT JOIN outbox o ON o.id = e.id AND o.kind = 'enrollment'
WHERE e.workspace_id = $1
ORDER BY e.operator_id, e.created_at DESC;

-- name: PasskeyInsert :exec
INSERT INTO operator_passkeys (credential_id, workspace_id, operator_id, credential, created_at) VALUES ($1, $2, $3, $4, $5);

-- name: PasskeyGet :one
SELECT * FROM operator_passkeys WHERE credential_id = $1;

-- name: PasskeyListForOperator :many
SELECT * FROM operator_passkeys WHERE operator_id = $1 ORDER BY created_at;

-- name: PasskeyLockForOperator :many
-- An operator's passkeys, locked until the transaction ends: removals of
-- two of them at once are judged one after the other.
SELECT credential_id FROM operator_passkeys WHERE operator_id = $1 ORDER BY credential_id FOR UPDATE;

-- name: PasskeyDelete :execrows
DELETE FROM operator_passkeys WHERE operator_id = $1 AND credential_id = $2;

-- name: PasskeyUpdate :exec
UPDATE operator_passkeys SET credential = $2, last_used_at = $3 WHERE credential_id = $1;

-- name: ConsoleSessionInsert :exec
INSERT INTO operator_sessions (token_hash, workspace_id, operator_id, created_at, last_seen_at) VALUES ($1, $2, $3, $4, $4);

-- name: ConsoleSessionGet :one
-- A session with its operator, read on every console request, so that a
-- removal or a change of role counts at once on every replica.
SELECT s.token_hash, s.workspace_id, s.operator_id, s.created_at, s.last_seen_at,
       o.email, o.display_name, o.role, o.removed_at, w.name AS workspace_name
FROM operator_sessions s
JOIN operators o ON o.id = s.operator_id
JOIN workspaces w ON w.id = s.workspace_id
WHERE s.token_hash = $1;

-- name: ConsoleSessionTouch :exec
UPDATE operator_sessions SET last_seen_at = $2 WHERE token_hash = $1;

-- name: ConsoleSessionDelete :exec
DELETE FROM operator_sessions WHERE token_hash = $1;

-- name: ConsoleSessionDeleteForOperator :execrows
DELETE FROM operator_sessions WHERE operator_id = $1;

-- name: ConsoleSessionDeleteIdle :execrows
DELETE FROM operator_sessions WHERE last_seen_at < $1;

-- name: CeremonyInsert :exec
INSERT INTO operator_ceremonies (id, kind, enrollment_id, data, expires_at) VALUES ($1, $2, $3, $4, $5);

-- name: CeremonyTake :one
-- A ceremony is finished once: taking it deletes it.
DELETE FROM operator_ceremonies WHERE id = $1 AND kind = $2 RETURNING *;

-- name: CeremonyDeleteExpired :execrows
DELETE FROM operator_ceremonies WHERE expires_at < $1;

-- name: AgreementWorkspaces :many
-- The workspace of each agreement named, for the console's live lists.
SELECT id, workspace_id FROM agreements WHERE id = ANY(@ids::uuid[]);

-- name: WorkspaceNotify :exec
-- Tells every replica, once the transaction commits, that something of a
-- workspace that no room shows changed (an operator removed or given
-- another role): the channel is store.WorkspaceChannel.
SELECT pg_notify('consensus_workspace', @workspace_id::text);
