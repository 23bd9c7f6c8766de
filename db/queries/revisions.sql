-- name: RevisionInsert :exec
INSERT INTO revisions (agreement_id, number, canonical_json, markdown, revision_digest, markdown_digest, terms_digest, locked_at, workspace_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, (SELECT workspace_id FROM agreements WHERE id = $1));

-- name: RevisionGet :one
SELECT * FROM revisions WHERE agreement_id = $1 AND number = $2;

-- name: RevisionListLocked :many
-- Every revision of an agreement in full, oldest first: what its record
-- carries.
SELECT * FROM revisions WHERE agreement_id = $1 ORDER BY number;

-- name: RevisionListByAgreement :many
-- Every revision's number, digests, deadline and lock time, oldest first:
-- the room's history of revisions, without the canonical bytes.
SELECT number, revision_digest, markdown_digest, terms_digest, locked_at,
       coalesce(canonical_json::jsonb ->> 'deadline', '')::text AS deadline
FROM revisions WHERE agreement_id = $1 ORDER BY number;

-- name: RevisionListByToken :many
-- RevisionListByAgreement for the agreement of a participant token's owner.
SELECT r.number, r.revision_digest, r.markdown_digest, r.terms_digest, r.locked_at,
       coalesce(r.canonical_json::jsonb ->> 'deadline', '')::text AS deadline
FROM revisions r JOIN participants p ON p.agreement_id = r.agreement_id
WHERE p.token_hash = $1 ORDER BY r.number;

-- name: RevisionGetCurrent :one
-- The agreement's current revision, read in the statement that knows which
-- one is current.
SELECT r.* FROM revisions r JOIN agreements a ON a.id = r.agreement_id AND r.number = a.current_revision
WHERE a.id = $1;

-- name: RevisionGetCurrentByToken :one
-- The current revision of the agreement of a participant token's owner.
SELECT r.* FROM revisions r
JOIN agreements a ON a.id = r.agreement_id AND r.number = a.current_revision
JOIN participants p ON p.agreement_id = a.id
WHERE p.token_hash = $1;
