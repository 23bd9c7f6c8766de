-- name: RevisionInsert :exec
INSERT INTO revisions (agreement_id, number, canonical_json, markdown, revision_digest, markdown_digest, locked_at)
VALUES ($1, $2, $3, $4, $5, $6, $7);

-- name: RevisionGet :one
SELECT * FROM revisions WHERE agreement_id = $1 AND number = $2;

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
