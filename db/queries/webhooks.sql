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

-- name: WebhookDeliveryLease :one
-- Leases one due delivery of a live endpoint until lease_until: no other
-- worker takes it before then, and no transaction stays open while the
-- receiver is called. A worker that dies mid-call leaves the lease to run
-- out, and the delivery is made again (same webhook-id).
WITH due AS (
    SELECT d.id
    FROM webhook_deliveries d
    JOIN webhooks w ON w.participant_id = d.participant_id AND w.disabled_at IS NULL
    WHERE d.state IN ('queued', 'retrying') AND d.next_attempt_at <= sqlc.arg('now')
    ORDER BY d.next_attempt_at, d.id
    LIMIT 1
    FOR UPDATE OF d SKIP LOCKED
)
UPDATE webhook_deliveries d
SET next_attempt_at = sqlc.arg('lease_until')
FROM due, webhooks w
WHERE d.id = due.id AND w.participant_id = d.participant_id
RETURNING d.id, d.participant_id, d.agreement_id, d.invitation_id, d.type, d.seq, d.outcome, d.attempts, d.created_at, w.url;

-- name: WebhookDeliveryRelease :exec
-- Gives a leased delivery back at once, its attempt not counted (the
-- worker stopped before the receiver answered).
UPDATE webhook_deliveries SET next_attempt_at = $2
WHERE id = $1 AND state IN ('queued', 'retrying');

-- name: WebhookDeliveryFinish :exec
-- Records an attempt: delivered, failed for good, or to retry at next_attempt_at.
UPDATE webhook_deliveries
SET state = $2, attempts = attempts + 1, last_status = $3, last_error = $4, next_attempt_at = $5,
    finished_at = CASE WHEN $2 IN ('delivered', 'failed') THEN sqlc.arg('now')::timestamptz ELSE NULL END
WHERE id = $1;

-- name: WebhookDisable :exec
-- The receiver answered 410 Gone: no more deliveries to it.
WITH dropped AS (
    UPDATE webhook_deliveries SET state = 'failed', last_error = 'webhook disabled: ' || sqlc.arg('reason')::text, finished_at = sqlc.arg('now')
    WHERE webhook_deliveries.participant_id = sqlc.arg('participant_id') AND state IN ('queued', 'retrying') AND id <> sqlc.arg('delivery_id')
)
UPDATE webhooks SET disabled_at = sqlc.arg('now'), disabled_reason = sqlc.arg('reason')
WHERE webhooks.participant_id = sqlc.arg('participant_id');
