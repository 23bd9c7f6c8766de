-- name: EventInsert :exec
INSERT INTO events (id, agreement_id, seq, participant_id, revision, action, body, idempotency_key,
                    command_digest, created_at, prev_hash, hash, addressed_to, in_reply_to, workspace_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, (SELECT workspace_id FROM agreements WHERE id = $2));

-- name: EventGetByKey :one
SELECT * FROM events WHERE participant_id = $1 AND idempotency_key = $2;

-- name: EventListByAgreement :many
SELECT * FROM events WHERE agreement_id = $1 ORDER BY seq;

-- name: EventListAfter :many
-- The events after seq, in order: what a cache that holds seq and the
-- events before it lacks.
SELECT * FROM events WHERE agreement_id = $1 AND seq > $2 ORDER BY seq;

-- name: EventPriorsByToken :many
-- The events that the owners of participant tokens stored under idempotency
-- keys, paired by position (n, from 1): what an append replays instead of
-- storing its event again. A pair without one has no row. LATERAL with
-- LIMIT, as in ParticipantHolders, keeps every plan on the indexes; the
-- subquery is named events so that sqlc.embed gives the plain Event row.
SELECT t.n::integer AS n, sqlc.embed(events)
FROM (SELECT unnest(@token_hashes::bytea[]) AS token_hash, unnest(@idempotency_keys::text[]) AS idempotency_key,
             generate_subscripts(@token_hashes::bytea[], 1) AS n) AS t
CROSS JOIN LATERAL (SELECT id FROM participants WHERE participants.token_hash = t.token_hash LIMIT 1) AS p
CROSS JOIN LATERAL (SELECT * FROM events e
                    WHERE e.participant_id = p.id AND e.idempotency_key = t.idempotency_key LIMIT 1) AS events;

-- name: EventBySignature :many
-- The event on which the owner of a participant token stored this
-- signature, if any: a signature speaks for one event. It reads the
-- owner's events through their (participant_id, revision) index, at most
-- 100 per revision.
SELECT e.id FROM participants p
JOIN events e ON e.participant_id = p.id
WHERE p.token_hash = @token_hash AND e.signature = @signature::bytea
LIMIT 1;

-- name: EventAppendBatch :exec
-- Appends events to their agreements in one statement: each event, its
-- participant's counters (and decision with its evidence, when terminal),
-- and its agreement's chain head, version and, when the event decided it,
-- outcome. An agreement may have several events in the batch, in seq
-- order with consecutive links: its head becomes the last one, its version
-- grows by their number, and only the last may set the outcome or be a
-- decision. A participant's events in the batch are all on one revision.
-- The caller holds each agreement's lock and has seen its outcome pending.
-- One statement for a batch costs the server one executor start and one
-- pass over each table's constraints, where a statement per event paid
-- them for every event.
--
-- The arrays are parallel, one element per event (unnest in the select
-- list zips them); outcome_statuses holds '' and outcome_event_ids the nil
-- UUID where an event sets no outcome; addressed_tos holds each event's
-- addressees as an array literal ('' for none) and in_reply_tos the nil
-- UUID where an event answers nothing. Each update finds its rows by
-- = ANY, an index scan even in the generic plan, which guesses 1,000
-- events: from the join alone, it would scan the whole table.
WITH e AS (
    SELECT unnest(@ids::uuid[]) AS id,
           unnest(@agreement_ids::uuid[]) AS agreement_id,
           unnest(@seqs::bigint[]) AS seq,
           unnest(@participant_ids::uuid[]) AS participant_id,
           unnest(@revisions::integer[]) AS revision,
           unnest(@actions::text[]) AS action,
           unnest(@bodies::text[]) AS body,
           unnest(@idempotency_keys::text[]) AS idempotency_key,
           unnest(@command_digests::text[]) AS command_digest,
           unnest(@created_ats::timestamptz[]) AS created_at,
           unnest(@prev_hashes::text[]) AS prev_hash,
           unnest(@hashes::text[]) AS hash,
           unnest(@signatures::bytea[]) AS signature,
           unnest(@addressed_tos::text[]) AS addressed_to,
           unnest(@in_reply_tos::uuid[]) AS in_reply_to,
           unnest(@evidences::text[]) AS evidence,
           unnest(@terminals::boolean[]) AS terminal,
           unnest(@outcome_statuses::text[]) AS outcome_status,
           unnest(@outcome_decided_ats::timestamptz[]) AS outcome_decided_at,
           unnest(@outcome_event_ids::uuid[]) AS outcome_event_id
), inserted AS (
    INSERT INTO events (id, agreement_id, seq, participant_id, revision, action, body, idempotency_key,
                        command_digest, created_at, prev_hash, hash, signature, evidence, addressed_to, in_reply_to, workspace_id)
    SELECT e.id, e.agreement_id, e.seq, e.participant_id, e.revision, e.action, e.body, e.idempotency_key,
           e.command_digest, e.created_at, e.prev_hash, e.hash, e.signature, nullif(e.evidence, ''),
           nullif(e.addressed_to, '')::uuid[], nullif(e.in_reply_to, '00000000-0000-0000-0000-000000000000'),
           (SELECT a.workspace_id FROM agreements a WHERE a.id = e.agreement_id)
    FROM e
), per_participant AS (
    -- Each participant's events of the batch: how many, and on which
    -- revision (all of one participant's are on the same one).
    SELECT participant_id, max(revision) AS revision, count(*)::integer AS n
    FROM e
    GROUP BY participant_id
), decided AS (
    -- Each participant's last decision of the batch, if it made one.
    SELECT DISTINCT ON (participant_id) participant_id, id, seq, revision, action, created_at, evidence
    FROM e
    WHERE terminal
    ORDER BY participant_id, seq DESC
), counted AS (
    UPDATE participants p
    SET event_count       = CASE WHEN p.events_revision = c.revision THEN p.event_count + c.n ELSE c.n END,
        events_revision   = c.revision,
        state             = CASE WHEN d.id IS NOT NULL THEN 'decided' ELSE p.state END,
        decision          = CASE WHEN d.id IS NOT NULL THEN d.action ELSE p.decision END,
        decision_event_id = CASE WHEN d.id IS NOT NULL THEN d.id ELSE p.decision_event_id END,
        decision_seq      = CASE WHEN d.id IS NOT NULL THEN d.seq ELSE p.decision_seq END,
        decision_revision = CASE WHEN d.id IS NOT NULL THEN d.revision ELSE p.decision_revision END,
        decided_at        = CASE WHEN d.id IS NOT NULL THEN d.created_at ELSE p.decided_at END,
        decision_evidence = CASE WHEN d.id IS NOT NULL THEN nullif(d.evidence, '') ELSE p.decision_evidence END
    FROM per_participant c LEFT JOIN decided d ON d.participant_id = c.participant_id
    WHERE p.id = c.participant_id AND p.id = ANY(@participant_ids::uuid[])
), head AS (
    -- Each agreement's last event of the batch, the new chain head, with
    -- how many the batch holds; only the last can set the outcome.
    SELECT DISTINCT ON (agreement_id) agreement_id, seq, hash, outcome_status, outcome_decided_at, outcome_event_id,
           count(*) OVER (PARTITION BY agreement_id) AS n
    FROM e
    ORDER BY agreement_id, seq DESC
)
UPDATE agreements a
SET head_seq = h.seq, head_hash = h.hash, version = a.version + h.n,
    outcome_status     = CASE WHEN h.outcome_status <> '' THEN h.outcome_status ELSE a.outcome_status END,
    outcome_decided_at = CASE WHEN h.outcome_status <> '' THEN h.outcome_decided_at ELSE a.outcome_decided_at END,
    outcome_event_id   = CASE WHEN h.outcome_status <> ''
                              THEN nullif(h.outcome_event_id, '00000000-0000-0000-0000-000000000000')
                              ELSE a.outcome_event_id END
FROM head h
WHERE a.id = h.agreement_id AND a.id = ANY(@agreement_ids::uuid[]);

-- name: EventTerminalListByAgreement :many
-- Every terminal decision of an agreement in order, on any revision: what a
-- new revision reads to find each participant's standing decision.
SELECT id, seq, participant_id, revision, action, created_at, coalesce(evidence, '')::text AS evidence
FROM events
WHERE agreement_id = $1 AND action IN ('agree', 'disagree', 'abstain')
ORDER BY seq;

-- name: EventReplyTarget :one
-- The agreement and action of an event: what a reply naming it checks.
SELECT agreement_id, action FROM events WHERE id = $1;
