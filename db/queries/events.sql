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
