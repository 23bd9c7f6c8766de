-- name: ParticipantInsert :exec
INSERT INTO participants (id, agreement_id, position, display_name, kind, email, required)
VALUES ($1, $2, $3, $4, $5, $6, $7);

-- name: ParticipantListByAgreement :many
SELECT * FROM participants WHERE agreement_id = $1 ORDER BY position;

-- name: ParticipantGet :one
SELECT * FROM participants WHERE id = $1;

-- name: ParticipantGetByTokenHash :one
SELECT p.*, i.id AS invitation_id
FROM participants p
JOIN invitations i ON i.participant_id = p.id
WHERE p.token_hash = $1;

-- name: ParticipantClaim :execrows
-- The first claim fixes the binding; later claims must replay it exactly.
UPDATE participants
SET state = 'claimed', binding_json = $2, binding_digest = $3, token_hash = $4, claimed_at = $5
WHERE id = $1 AND binding_digest IS NULL;

-- name: ParticipantSetDecided :exec
UPDATE participants SET state = 'decided' WHERE id = $1;

-- name: ParticipantRevoke :one
UPDATE participants SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1
RETURNING *;
