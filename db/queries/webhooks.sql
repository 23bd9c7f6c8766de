-- name: WebhookUpsert :exec
-- Registers (or replaces) a participant's endpoint; a replaced endpoint is
-- live again, and deliveries still queued for the old URL go to the new one.
-- It first marks the agreement as having endpoints, which locks its row
-- before the endpoint's, in the order a revocation takes them (00009).
WITH marked AS (
    UPDATE agreements a SET webhooks_registered = true
    FROM participants p
    WHERE p.id = $1 AND a.id = p.agreement_id
    RETURNING a.id
)
INSERT INTO webhooks (participant_id, agreement_id, url, created_at, workspace_id)
SELECT p.id, p.agreement_id, $2, $3, p.workspace_id FROM participants p JOIN marked m ON m.id = p.agreement_id WHERE p.id = $1
ON CONFLICT (participant_id) DO UPDATE SET url = EXCLUDED.url, created_at = EXCLUDED.created_at, disabled_at = NULL, disabled_reason = NULL;

-- name: WebhookGet :one
-- A participant's endpoint with its delivery state.
SELECT w.url, w.created_at, w.disabled_at, w.disabled_reason,
       (SELECT count(*) FROM webhook_deliveries d WHERE d.participant_id = w.participant_id AND d.state IN ('queued', 'retrying'))::bigint AS pending,
       (SELECT count(*) FROM webhook_deliveries d WHERE d.participant_id = w.participant_id AND d.state = 'failed')::bigint AS failed,
       l.last_status, l.finished_at AS last_finished_at, coalesce(l.state, '')::text AS last_state, coalesce(l.attempts, 0)::integer AS last_attempts
FROM webhooks w
LEFT JOIN LATERAL (
    SELECT d.last_status, d.finished_at, d.state, d.attempts FROM webhook_deliveries d
    WHERE d.participant_id = w.participant_id AND d.attempts > 0
    ORDER BY d.created_at DESC, d.id LIMIT 1
) l ON true
WHERE w.participant_id = $1;

-- name: WebhookDelete :execrows
-- Removes the endpoint; deliveries not yet made are dropped with it.
WITH dropped AS (
    UPDATE webhook_deliveries SET state = 'failed', last_error = 'webhook removed', finished_at = $2
    WHERE webhook_deliveries.participant_id = $1 AND state IN ('queued', 'retrying')
)
DELETE FROM webhooks WHERE webhooks.participant_id = $1;

-- name: WebhookDeliveryGet :one
-- A delivery still to make, with the URL of its endpoint; no row when it
-- was made, given up or dropped (its endpoint removed or disabled).
SELECT d.id, d.participant_id, d.agreement_id, d.invitation_id, d.type, d.seq, d.outcome, d.attempts, d.created_at, w.url
FROM webhook_deliveries d
JOIN webhooks w ON w.participant_id = d.participant_id AND w.disabled_at IS NULL
WHERE d.id = $1 AND d.state IN ('queued', 'retrying');

-- name: WebhookDeliveryFinish :execrows
-- Records an attempt: delivered, failed for good, or to retry at
-- next_attempt_at. Only a delivery still to make is changed: one dropped
-- while its attempt was in flight (the endpoint removed, perhaps replaced)
-- stays dropped and is never made again.
UPDATE webhook_deliveries
SET state = $2, attempts = attempts + 1, last_status = $3, last_error = $4, next_attempt_at = $5,
    finished_at = CASE WHEN $2 IN ('delivered', 'failed') THEN sqlc.arg('now')::timestamptz ELSE NULL END
WHERE id = $1 AND state IN ('queued', 'retrying');

-- name: WebhookDisable :exec
-- The receiver answered 410 Gone: no more deliveries to it.
WITH dropped AS (
    UPDATE webhook_deliveries SET state = 'failed', last_error = 'webhook disabled: ' || sqlc.arg('reason')::text, finished_at = sqlc.arg('now')
    WHERE webhook_deliveries.participant_id = sqlc.arg('participant_id') AND state IN ('queued', 'retrying') AND id <> sqlc.arg('delivery_id')
)
UPDATE webhooks SET disabled_at = sqlc.arg('now'), disabled_reason = sqlc.arg('reason')
WHERE webhooks.participant_id = sqlc.arg('participant_id');

-- name: WebhookDeliveriesQueue :many
-- The deliveries of a change to an agreement, written by the transaction
-- that made it: one per kind (room.event, room.outcome, room.revision, in
-- the order given) and live endpoint of a participant not revoked, with
-- the chain head and outcome the change left. The caller queues a River
-- job for each in the same transaction.
INSERT INTO webhook_deliveries (id, participant_id, agreement_id, invitation_id, type, seq, outcome, created_at, next_attempt_at, workspace_id)
SELECT gen_random_uuid(), w.participant_id, a.id, p.invitation_id, k.kind, a.head_seq, a.outcome_status,
       clock_timestamp(), clock_timestamp(), a.workspace_id
FROM agreements a
JOIN participants p ON p.agreement_id = a.id AND p.revoked_at IS NULL
JOIN webhooks w ON w.participant_id = p.id AND w.disabled_at IS NULL
CROSS JOIN unnest(@kinds::text[]) WITH ORDINALITY AS k(kind, n)
WHERE a.id = @agreement_id
ORDER BY k.n
RETURNING id, participant_id;

-- name: WebhookDeliveriesAdopt :many
-- Up to @max deliveries a replica of the previous release wrote without a
-- job (migration 00029's trigger), oldest first, marked queued; the caller
-- queues their River jobs in the same transaction. Rows another
-- transaction is adopting are skipped, not waited for.
UPDATE webhook_deliveries SET queued = true
WHERE id IN (SELECT u.id FROM webhook_deliveries u WHERE NOT u.queued ORDER BY u.created_at LIMIT @max FOR UPDATE SKIP LOCKED)
RETURNING id, participant_id, created_at;
