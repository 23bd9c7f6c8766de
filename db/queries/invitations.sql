-- name: InvitationInsert :exec
INSERT INTO invitations (id, participant_id, agreement_id, secret_hash, proof_hash, expires_at, issued_at, workspace_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, (SELECT workspace_id FROM agreements WHERE id = $3));

-- name: InvitationGet :one
-- Everything the agent routes need to judge an invitation in one read.
SELECT i.*, p.kind, p.display_name, p.email, p.required, p.revoked_at, p.binding_json, p.binding_digest,
       a.current_revision, a.deadline
FROM invitations i
JOIN participants p ON p.id = i.participant_id
JOIN agreements a ON a.id = i.agreement_id
WHERE i.id = $1;

-- name: InvitationRotate :exec
-- Resend: fresh secret and proof; the previous ones stop working.
UPDATE invitations SET secret_hash = $2, proof_hash = $3, issued_at = $4 WHERE id = $1;

-- name: InvitationListByAgreement :many
SELECT * FROM invitations WHERE agreement_id = $1;

-- name: InvitationSetExpiryByAgreement :exec
-- An invitation expires with the deadline: a revision that moves the
-- deadline moves every invitation of the agreement with it.
UPDATE invitations SET expires_at = $2 WHERE agreement_id = $1;
