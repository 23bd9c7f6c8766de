-- name: EventInsert :exec
INSERT INTO events (id, agreement_id, seq, participant_id, revision, action, body, idempotency_key,
                    command_digest, created_at, prev_hash, hash)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12);

-- name: EventGetByKey :one
SELECT * FROM events WHERE participant_id = $1 AND idempotency_key = $2;

-- name: EventListByAgreement :many
SELECT * FROM events WHERE agreement_id = $1 ORDER BY seq;

-- name: EventListAfter :many
-- The events after seq, in order: what a cache that holds seq and the
-- events before it lacks.
SELECT * FROM events WHERE agreement_id = $1 AND seq > $2 ORDER BY seq;

-- name: EventAppend :exec
-- Appends one event in one statement: the event, its participant's
-- counters (and decision, when terminal), and the agreement's chain head,
-- version and, when the event decided it, outcome. The caller holds the
-- agreement's lock and has seen the outcome pending.
WITH event AS (
    INSERT INTO events (id, agreement_id, seq, participant_id, revision, action, body, idempotency_key,
                        command_digest, created_at, prev_hash, hash, signature)
    VALUES (sqlc.arg('id'), sqlc.arg('agreement_id'), sqlc.arg('seq'), sqlc.arg('participant_id'), sqlc.arg('revision'),
            sqlc.arg('action'), sqlc.arg('body'), sqlc.arg('idempotency_key'), sqlc.arg('command_digest'),
            sqlc.arg('created_at'), sqlc.arg('prev_hash'), sqlc.arg('hash'), sqlc.narg('signature'))
), counted AS (
    UPDATE participants
    SET event_count       = CASE WHEN events_revision = sqlc.arg('revision') THEN event_count + 1 ELSE 1 END,
        events_revision   = sqlc.arg('revision'),
        state             = CASE WHEN sqlc.arg('terminal')::boolean THEN 'decided' ELSE state END,
        decision          = CASE WHEN sqlc.arg('terminal') THEN sqlc.arg('action') ELSE decision END,
        decision_event_id = CASE WHEN sqlc.arg('terminal') THEN sqlc.arg('id') ELSE decision_event_id END,
        decision_seq      = CASE WHEN sqlc.arg('terminal') THEN sqlc.arg('seq') ELSE decision_seq END,
        decision_revision = CASE WHEN sqlc.arg('terminal') THEN sqlc.arg('revision') ELSE decision_revision END,
        decided_at        = CASE WHEN sqlc.arg('terminal') THEN sqlc.arg('created_at') ELSE decided_at END
    WHERE participants.id = sqlc.arg('participant_id')
)
UPDATE agreements
SET head_seq = sqlc.arg('seq'), head_hash = sqlc.arg('hash'), version = version + 1,
    outcome_status     = coalesce(sqlc.narg('outcome_status'), outcome_status),
    outcome_decided_at = coalesce(sqlc.narg('outcome_decided_at'), outcome_decided_at),
    outcome_event_id   = coalesce(sqlc.narg('outcome_event_id'), outcome_event_id)
WHERE agreements.id = sqlc.arg('agreement_id');

-- name: EventTerminalListByAgreement :many
-- Every terminal decision of an agreement in order, on any revision: what a
-- new revision reads to find each participant's standing decision.
SELECT id, seq, participant_id, revision, action, created_at
FROM events
WHERE agreement_id = $1 AND action IN ('agree', 'disagree', 'abstain')
ORDER BY seq;

-- name: EventPage :many
-- One page of the feed: the events after seq up to and including through
-- (the head of the agreement state the page reports), at most limit.
SELECT * FROM events
WHERE agreement_id = $1 AND seq > sqlc.arg('after') AND seq <= sqlc.arg('through')
ORDER BY seq
LIMIT sqlc.arg('max');
