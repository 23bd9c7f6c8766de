-- name: ArtifactInsert :exec
INSERT INTO artifacts (agreement_id, revision, body, sha256, finalized_at, workspace_id)
VALUES ($1, $2, $3, $4, $5, (SELECT workspace_id FROM agreements WHERE id = $1));

-- name: ArtifactGet :one
SELECT * FROM artifacts WHERE agreement_id = $1;

-- name: ArtifactMeta :one
-- What the room says about CONSENSUS.md, without its bytes.
SELECT sha256, octet_length(body)::integer AS bytes FROM artifacts WHERE agreement_id = $1;
