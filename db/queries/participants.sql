-- name: ParticipantInsert :exec
INSERT INTO participants (id, agreement_id, position, display_name, kind, email, required)
VALUES ($1, $2, $3, $4, $5, $6, $7);

-- name: ParticipantListByAgreement :many
SELECT * FROM participants WHERE agreement_id = $1 ORDER BY position;

-- name: ParticipantGet :one
SELECT * FROM participants WHERE id = $1;

-- name: ParticipantClaim :execrows
-- The first claim fixes the binding; later claims must replay it exactly.
UPDATE participants
SET state = 'claimed', binding_json = $2, binding_digest = $3, token_hash = $4, claimed_at = $5
WHERE id = $1 AND binding_digest IS NULL;

-- name: ParticipantAuth :one
-- A participant token's owner with what every participant route needs, in
-- one indexed lookup: a 304 answers from this row alone.
SELECT p.id, p.agreement_id, p.token_hash, p.revoked_at, i.id AS invitation_id,
       a.version, a.current_revision, a.deadline, a.outcome_status
FROM participants p
JOIN invitations i ON i.participant_id = p.id
JOIN agreements a ON a.id = p.agreement_id
WHERE p.token_hash = $1;

-- name: ParticipantRoster :many
-- The roster with its counters, in position order. Only the participant
-- named by $2 comes with its token hash: the one whose credential the
-- caller checks.
SELECT id, display_name, kind, required, state, revoked_at, events_revision, event_count,
       decision, decision_event_id, decision_seq, decision_revision, decided_at,
       (CASE WHEN id = $2 THEN token_hash END)::bytea AS token_hash
FROM participants
WHERE agreement_id = $1
ORDER BY position;

-- name: ParticipantCountEvent :exec
-- One more advisory event on revision $2 (the count restarts on a new revision).
UPDATE participants
SET event_count = CASE WHEN events_revision = $2 THEN event_count + 1 ELSE 1 END, events_revision = $2
WHERE id = $1;

-- name: ParticipantDecide :exec
-- A terminal event on revision $2: counted, and the participant's decision.
UPDATE participants
SET event_count = CASE WHEN events_revision = $2 THEN event_count + 1 ELSE 1 END, events_revision = $2,
    state = 'decided', decision = $3, decision_event_id = $4, decision_seq = $5, decision_revision = $2, decided_at = $6
WHERE id = $1;

-- name: ParticipantRevoke :one
UPDATE participants SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1
RETURNING *;
