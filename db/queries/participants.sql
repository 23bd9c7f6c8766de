-- name: ParticipantInsert :exec
INSERT INTO participants (id, agreement_id, position, display_name, kind, email, required, invitation_id, workspace_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, (SELECT workspace_id FROM agreements WHERE id = $2));

-- name: ParticipantListByAgreement :many
SELECT * FROM participants WHERE agreement_id = $1 ORDER BY position;

-- name: ParticipantGet :one
SELECT * FROM participants WHERE id = $1;

-- name: ParticipantClaim :execrows
-- The first claim fixes the binding; later claims must replay it exactly.
UPDATE participants
SET state = 'claimed', binding_json = $2, binding_digest = $3, token_hash = $4, claimed_at = $5, public_key = $6
WHERE id = $1 AND binding_digest IS NULL;

-- name: ParticipantAuth :many
-- The owners of participant tokens with what every participant route
-- needs, by index lookups: a 304 answers from its row alone. The tokens of
-- the requests that arrived while the previous lookup ran are looked up
-- together (package batch, through store.TokenOwners), on connections that
-- use the generic plan: a nested loop of one index probe per token.
SELECT p.id, p.agreement_id, p.token_hash, p.revoked_at, p.invitation_id, p.kind,
       a.version, a.current_revision, a.deadline, a.outcome_status
FROM unnest(@token_hashes::bytea[]) AS t(token_hash)
JOIN participants p ON p.token_hash = t.token_hash
JOIN agreements a ON a.id = p.agreement_id;

-- name: ParticipantRoster :many
-- The roster with its counters, in position order.
SELECT id, display_name, kind, required, state, revoked_at, events_revision, event_count,
       decision, decision_event_id, decision_seq, decision_revision, decided_at, decision_evidence
FROM participants
WHERE agreement_id = $1
ORDER BY position;

-- name: ParticipantHolders :many
-- The owners of participant tokens with their counters: n is the token's
-- position in the array, from 1, and an unknown token has no row. An
-- append runs it after it holds the agreements' locks, so a revocation
-- committed before is in revoked_at.
--
-- A statement that takes arrays runs on the generic plan, which guesses
-- their length (often 1,000) from nothing. A join the planner may reorder
-- could then hash a whole table; a LATERAL subquery with LIMIT is never
-- pulled up, so it is one index probe per element in every plan.
SELECT t.n::integer AS n,
       p.id, p.agreement_id, p.invitation_id, p.token_hash, p.revoked_at, p.kind, p.required, p.events_revision, p.event_count,
       p.decision, p.decision_event_id, p.decision_seq, p.decision_revision, p.decided_at, p.decision_evidence, p.public_key
FROM (SELECT unnest(@token_hashes::bytea[]) AS token_hash, generate_subscripts(@token_hashes::bytea[], 1) AS n) AS t
CROSS JOIN LATERAL (SELECT * FROM participants WHERE participants.token_hash = t.token_hash LIMIT 1) AS p;

-- name: ParticipantRule :one
-- What the decision rule reads of the roster of the agreement of a token's
-- owner: every participant that is required or has decided, with its
-- decision (empty and zero before one) and its bound key (empty without
-- one: CONSENSUS.md names the key of each signed decision), as one row of
-- parallel arrays: fifty rows would cost fifty scans and their allocations
-- on every append.
SELECT array_agg(id ORDER BY position)::uuid[] AS ids,
       array_agg(required ORDER BY position)::boolean[] AS required,
       array_agg(coalesce(decision, '') ORDER BY position)::text[] AS decisions,
       array_agg(coalesce(decision_event_id, '00000000-0000-0000-0000-000000000000') ORDER BY position)::uuid[] AS decision_event_ids,
       array_agg(coalesce(decision_seq, 0) ORDER BY position)::bigint[] AS decision_seqs,
       array_agg(coalesce(decision_revision, 0) ORDER BY position)::integer[] AS decision_revisions,
       array_agg(coalesce(decided_at, 'epoch') ORDER BY position)::timestamptz[] AS decided_at,
       array_agg(coalesce(decision_evidence, '') ORDER BY position)::text[] AS decision_evidences,
       array_agg(coalesce(public_key, ''::bytea) ORDER BY position)::bytea[] AS public_keys
FROM participants
WHERE agreement_id = (SELECT t.agreement_id FROM participants t WHERE t.token_hash = $1)
  AND (required OR decision IS NOT NULL);

-- name: ParticipantRevoke :one
UPDATE participants SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1
RETURNING *;

-- name: ParticipantSetDecision :exec
-- A new revision sets the participant's standing decision: the one that
-- counts on it or, when none does, the latest one (null: none at all).
-- state says whether a decision counts: decided, else claimed or invited.
UPDATE participants
SET decision = sqlc.narg('decision'), decision_event_id = sqlc.narg('decision_event_id'),
    decision_seq = sqlc.narg('decision_seq'), decision_revision = sqlc.narg('decision_revision'),
    decided_at = sqlc.narg('decided_at'), decision_evidence = sqlc.narg('decision_evidence'),
    state = CASE WHEN sqlc.arg('counts')::boolean THEN 'decided'
                 WHEN claimed_at IS NOT NULL THEN 'claimed'
                 ELSE 'invited' END
WHERE id = sqlc.arg('id');
