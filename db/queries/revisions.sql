-- name: RevisionInsert :exec
INSERT INTO revisions (agreement_id, number, canonical_json, markdown, revision_digest, markdown_digest, terms_digest, locked_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8);

-- name: RevisionGet :one
SELECT * FROM revisions WHERE agreement_id = $1 AND number = $2;

-- name: RevisionListByAgreement :many
-- Every revision's number, digests and lock time, oldest first: the room's
-- history of revisions, without the canonical bytes.
SELECT number, revision_digest, markdown_digest, terms_digest, locked_at
FROM revisions WHERE agreement_id = $1 ORDER BY number;
