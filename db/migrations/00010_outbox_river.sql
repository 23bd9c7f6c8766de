-- +goose Up

-- Emails leave through River's job queue (the river_job table, which River's
-- own migrations create before ours run). The outbox keeps one row per
-- email, its delivery state, Message-ID, sent-at record and sealed body; a
-- job of kind 'email' names the row and carries nothing else. Every message
-- still queued or retrying becomes one job, due when the message was due,
-- its attempts carried over so the attempt limit (12) still holds. No lease
-- or lock is kept in the outbox any more: which worker runs a job is River's
-- business.
INSERT INTO river_job (state, attempt, max_attempts, scheduled_at, args, kind, queue)
SELECT 'available', attempts, 12, next_attempt_at, jsonb_build_object('outbox_id', id), 'email', 'email'
FROM outbox
WHERE state IN ('queued', 'retrying')
ORDER BY next_attempt_at, id;

-- +goose Down
-- The jobs of queued emails stay; an older build ignores them and drains
-- the outbox itself by its state and next_attempt_at, which still hold.
DELETE FROM river_job WHERE kind = 'email';
