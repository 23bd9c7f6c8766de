-- name: OutboxInsert :exec
-- A message of an invitation, in its agreement's workspace.
INSERT INTO outbox (id, invitation_id, agreement_id, recipient, subject, message_id, sealed_body, created_at, next_attempt_at, kind, workspace_id)
VALUES (@id, @invitation_id::uuid, @agreement_id::uuid, @recipient, @subject, @message_id, @sealed_body, @created_at, @created_at, @kind,
        (SELECT workspace_id FROM agreements WHERE id = @agreement_id::uuid));

-- name: OutboxInsertEnrollment :exec
-- The email of an enrollment link: no invitation or agreement; the message
-- has the link's id (its body is sealed under it) and workspace.
INSERT INTO outbox (id, recipient, subject, message_id, sealed_body, created_at, next_attempt_at, kind, workspace_id)
VALUES ($1, $2, $3, $4, $5, $6, $6, 'enrollment', $7);

-- name: OutboxGet :one
-- One message, to send or to see that it was already sent.
SELECT * FROM outbox WHERE id = $1;

-- name: OutboxMarkSent :execrows
-- Only a message still to send is marked: the first worker to record a
-- delivery wins, and a later record of the same delivery changes nothing.
UPDATE outbox SET state = 'sent', sealed_body = NULL, attempts = attempts + 1, last_reply = $2, sent_at = $3
WHERE id = $1 AND state IN ('queued', 'retrying');

-- name: OutboxMarkRetry :execrows
UPDATE outbox SET state = 'retrying', attempts = attempts + 1, last_reply = $2, next_attempt_at = $3
WHERE id = $1 AND state IN ('queued', 'retrying');

-- name: OutboxMarkFailed :execrows
UPDATE outbox SET state = 'failed', sealed_body = NULL, attempts = attempts + 1, last_reply = $2
WHERE id = $1 AND state IN ('queued', 'retrying');

-- name: OutboxSupersede :exec
-- A resend replaces the invitation's credentials: unsent older invitations
-- are dropped (their credentials no longer work) and their bodies erased.
-- A revision notice carries no credential and stays queued.
UPDATE outbox SET state = 'failed', sealed_body = NULL, last_reply = 'superseded by a resend'
WHERE invitation_id = $1 AND state IN ('queued', 'retrying') AND kind = 'invitation';

-- name: OutboxAttemptInsert :exec
INSERT INTO outbox_attempts (outbox_id, attempt, attempted_at, ok, reply, workspace_id)
VALUES ($1, $2, $3, $4, $5, (SELECT workspace_id FROM outbox WHERE id = $1));

-- name: OutboxListByAgreement :many
SELECT id, invitation_id, recipient, subject, message_id, state, attempts, next_attempt_at, last_reply, created_at, sent_at, kind
FROM outbox WHERE agreement_id = $1 ORDER BY created_at, id;

-- name: OutboxAttemptListByAgreement :many
SELECT t.* FROM outbox_attempts t JOIN outbox o ON o.id = t.outbox_id
WHERE o.agreement_id = $1 ORDER BY t.attempted_at, t.attempt;

-- name: OutboxCountPending :one
-- Messages still to be sent (the outbox depth); the partial due index
-- covers exactly these rows.
SELECT count(*) FROM outbox WHERE state IN ('queued', 'retrying');

-- name: OutboxAdoptEnrollment :exec
-- An enrollment link whose email a replica of the previous release wrote
-- into the enrollment's own columns (migration 00023) becomes the outbox
-- message with the enrollment's id, unless it already is one.
INSERT INTO outbox (id, recipient, subject, message_id, sealed_body, state, attempts, next_attempt_at, last_reply,
                    created_at, sent_at, kind, workspace_id)
SELECT e.id, e.recipient, e.subject, e.message_id, e.sealed_body, coalesce(e.state, 'queued'), e.attempts, e.created_at, e.last_reply,
       e.created_at, e.sent_at, 'enrollment', e.workspace_id
FROM operator_enrollments e
WHERE e.id = @enrollment_id::uuid AND e.recipient IS NOT NULL AND e.sealed_body IS NOT NULL
ON CONFLICT DO NOTHING;
