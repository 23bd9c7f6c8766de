-- name: LogTryLock :one
-- One integrator at a time across replicas: a transaction-scoped advisory
-- lock, released by the commit or rollback (the key is arbitrary, fixed).
SELECT pg_try_advisory_xact_lock(4477021338615907329);

-- name: LogSize :one
SELECT coalesce(max(idx) + 1, 0)::bigint FROM log_leaves;

-- name: LogRoomsChanged :many
-- The rooms among ids (or every room, when all) whose revision, head or
-- final record the log does not hold yet, with what the log holds of them.
SELECT a.id, a.current_revision, a.head_seq, a.head_hash, a.outcome_status,
       coalesce(l.revision, 0)::integer AS logged_revision,
       coalesce(l.seq, 0)::bigint       AS logged_seq,
       coalesce(l.head_hash, '')::text  AS logged_head,
       coalesce(l.record, false)::boolean AS logged_record,
       coalesce(e.created_at, a.created_at)::timestamptz AS head_at,
       r.body AS record_body
FROM agreements a
LEFT JOIN log_rooms l ON l.agreement_id = a.id
LEFT JOIN LATERAL (SELECT ev.created_at FROM events ev WHERE ev.agreement_id = a.id AND ev.seq = a.head_seq) e ON true
LEFT JOIN records r ON r.agreement_id = a.id
WHERE (@every_room::boolean OR a.id = ANY(@ids::uuid[]))
  AND (l.agreement_id IS NULL
       OR a.current_revision <> l.revision
       OR a.head_seq <> l.seq
       OR a.head_hash <> l.head_hash
       OR (r.agreement_id IS NOT NULL AND NOT l.record))
ORDER BY a.id;

-- name: LogRevisions :many
-- The locked revisions of the given agreements, for revision leaves.
SELECT agreement_id, number, revision_digest, locked_at
FROM revisions WHERE agreement_id = ANY(@ids::uuid[])
ORDER BY agreement_id, number;

-- name: LogFinalWithoutRecord :many
-- Agreements whose outcome is final but whose record was never issued:
-- the integrator issues them so that every final record enters the log,
-- at most @max_rooms a round.
SELECT a.id FROM agreements a
WHERE (@every_room::boolean OR a.id = ANY(@ids::uuid[]))
  AND a.outcome_status <> 'pending'
  AND NOT EXISTS (SELECT 1 FROM records r WHERE r.agreement_id = a.id)
LIMIT @max_rooms::integer;

-- name: LogLeavesInsert :exec
INSERT INTO log_leaves (idx, agreement_id, kind, body)
SELECT unnest(@idx::bigint[]), unnest(@agreement_id::uuid[]), unnest(@kind::text[]), unnest(@body::bytea[]);

-- name: LogHashesInsert :exec
INSERT INTO log_hashes (idx, hash)
SELECT unnest(@idx::bigint[]), unnest(@hash::bytea[]);

-- name: LogHashes :many
SELECT idx, hash FROM log_hashes WHERE idx = ANY(@idx::bigint[]);

-- name: LogRoomsUpsert :exec
INSERT INTO log_rooms (agreement_id, revision, seq, head_hash, record)
SELECT unnest(@agreement_id::uuid[]), unnest(@revision::integer[]), unnest(@seq::bigint[]), unnest(@head_hash::text[]), unnest(@record::boolean[])
ON CONFLICT (agreement_id) DO UPDATE
SET revision = excluded.revision, seq = excluded.seq, head_hash = excluded.head_hash, record = excluded.record;

-- name: LogCheckpointInsert :exec
INSERT INTO log_checkpoints (size, root, signed, created_at) VALUES ($1, $2, $3, $4);

-- name: LogCheckpointLatest :one
SELECT * FROM log_checkpoints ORDER BY size DESC LIMIT 1;

-- name: LogCheckpointForProof :one
-- The checkpoint a leaf at index @idx is proven against: of those that
-- hold it, the one most witnesses cosigned, the newest among equals.
SELECT c.size, c.root, c.signed, c.created_at
FROM log_checkpoints c
WHERE c.size > @idx::bigint
ORDER BY (SELECT count(*) FROM log_cosignatures s WHERE s.size = c.size) DESC, c.size DESC
LIMIT 1;

-- name: LogCosignatures :many
SELECT witness, line FROM log_cosignatures WHERE size = $1 ORDER BY witness;

-- name: LogCosignatureInsert :exec
INSERT INTO log_cosignatures (size, witness, line, created_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (size, witness) DO NOTHING;

-- name: LogRecordLeaf :one
SELECT idx, body FROM log_leaves WHERE agreement_id = $1 AND kind = 'record' ORDER BY idx LIMIT 1;

-- name: LogEntries :many
SELECT body FROM log_leaves WHERE idx >= @first::bigint AND idx < @last::bigint ORDER BY idx;

-- name: LogWitnessGet :one
SELECT * FROM log_witnesses WHERE name = $1;

-- name: LogWitnessList :many
SELECT * FROM log_witnesses ORDER BY name;

-- name: LogWitnessCosigned :exec
INSERT INTO log_witnesses (name, size, updated_at) VALUES ($1, $2, $3)
ON CONFLICT (name) DO UPDATE
SET size = greatest(log_witnesses.size, excluded.size), failed_size = NULL, failure = NULL, refused = false, updated_at = excluded.updated_at;

-- name: LogWitnessFailed :exec
-- A witness that refused (refused) or could not be reached; size keeps
-- what it last cosigned, or @known when it told which size it holds.
INSERT INTO log_witnesses (name, size, failed_size, failure, refused, updated_at)
VALUES (@name, coalesce(sqlc.narg(known)::bigint, 0), @failed_size, @failure, @refused, @updated_at)
ON CONFLICT (name) DO UPDATE
SET size = coalesce(sqlc.narg(known)::bigint, log_witnesses.size), failed_size = excluded.failed_size,
    failure = excluded.failure, refused = excluded.refused, updated_at = excluded.updated_at;
