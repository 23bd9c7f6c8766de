-- name: OutboxInsert :exec
-- A message of an invitation, in its agreement's workspace. It threads
-- under the invitation's first email (none for that email itself), then
-- under @refs (an answer: the reply it answers).
INSERT INTO outbox (id, invitation_id, agreement_id, recipient, subject, message_id, sealed_body, created_at, next_attempt_at, kind, workspace_id, refs)
VALUES (@id, @invitation_id::uuid, @agreement_id::uuid, @recipient, @subject, @message_id, @sealed_body, @created_at, @created_at, @kind,
        (SELECT workspace_id FROM agreements WHERE id = @agreement_id::uuid),
        coalesce((SELECT ARRAY[o.message_id] FROM outbox o WHERE o.invitation_id = @invitation_id::uuid AND o.kind = 'invitation'
                  ORDER BY o.state = 'failed', o.created_at, o.id LIMIT 1), '{}') || @refs::text[]);

-- name: OutboxQueueOutcome :many
-- The outcome email of every participant not revoked of an agreement whose
-- outcome is final, in the transaction that made it final: no secret, so
-- no body is stored; the worker writes it from the final record when it
-- sends. Each threads under its invitation's first email, whose domain its
-- Message-ID takes. A participant who has one already gets none
-- (outbox_outcome_once), nor does one without an invitation email.
INSERT INTO outbox (id, invitation_id, agreement_id, participant_id, recipient, subject, message_id, created_at, next_attempt_at,
                    kind, workspace_id, refs)
SELECT gen_random_uuid(), p.invitation_id, a.id, p.id, p.email,
       'CONSENSUS.md: outcome ' || replace(a.outcome_status, '_', ' ') || ': ' || coalesce(r.canonical_json::jsonb ->> 'title', 'an agreement'),
       'outcome-' || p.id::text || '@' || split_part(root.message_id, '@', 2), @now, @now, 'outcome', a.workspace_id, ARRAY[root.message_id]
FROM agreements a
JOIN revisions r ON r.agreement_id = a.id AND r.number = a.current_revision
JOIN participants p ON p.agreement_id = a.id AND p.revoked_at IS NULL
JOIN LATERAL (SELECT o.message_id FROM outbox o WHERE o.invitation_id = p.invitation_id AND o.kind = 'invitation'
              ORDER BY o.state = 'failed', o.created_at, o.id LIMIT 1) root ON true
WHERE a.id = @agreement_id AND a.outcome_status <> 'pending'
ON CONFLICT DO NOTHING
RETURNING id;

-- name: OutboxQueueReminders :many
-- The reminders due at @now: for each required participant, not revoked,
-- whose decision does not count on the current revision, of an agreement
-- still pending before its deadline, the latest of the agreement's
-- reminder times that has passed, unless it came before the participant's
-- invitation was issued or was queued already (outbox_reminder_once). A
-- sweep that ran late sends the latest reminder only. Like an outcome
-- email, a reminder stores no body.
INSERT INTO outbox (id, invitation_id, agreement_id, participant_id, remind_at, recipient, subject, message_id, created_at, next_attempt_at,
                    kind, workspace_id, refs)
SELECT gen_random_uuid(), p.invitation_id, a.id, p.id, due.at, p.email,
       'CONSENSUS.md: reminder: ' || coalesce(r.canonical_json::jsonb ->> 'title', 'an agreement'),
       'reminder-' || p.id::text || '-' || extract(epoch FROM due.at)::bigint::text || '@' || split_part(root.message_id, '@', 2),
       @now, @now, 'reminder', a.workspace_id, ARRAY[root.message_id]
FROM agreements a
JOIN revisions r ON r.agreement_id = a.id AND r.number = a.current_revision
JOIN participants p ON p.agreement_id = a.id AND p.required AND p.revoked_at IS NULL AND p.state <> 'decided'
JOIN invitations i ON i.id = p.invitation_id
JOIN LATERAL (SELECT max(a.deadline - make_interval(secs => s)) AS at FROM unnest(a.reminders) s
              WHERE a.deadline - make_interval(secs => s) <= @now) due ON due.at > i.issued_at
JOIN LATERAL (SELECT o.message_id FROM outbox o WHERE o.invitation_id = p.invitation_id AND o.kind = 'invitation'
              ORDER BY o.state = 'failed', o.created_at, o.id LIMIT 1) root ON true
WHERE a.outcome_status = 'pending' AND a.remind_from <= @now AND a.deadline > @now
  AND NOT EXISTS (SELECT 1 FROM outbox q WHERE q.participant_id = p.id AND q.kind = 'reminder' AND q.remind_at = due.at)
ON CONFLICT DO NOTHING
RETURNING id;

-- name: OutboxDrop :execrows
-- A message no longer to send (a reminder whose participant decided since)
-- is given up without an attempt.
UPDATE outbox SET state = 'failed', sealed_body = NULL, last_reply = $2
WHERE id = $1 AND state IN ('queued', 'retrying');

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
