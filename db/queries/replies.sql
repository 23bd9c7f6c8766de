-- name: ReplyInsert :execrows
-- A reply acted on; a Message-ID seen before inserts nothing (0 rows).
INSERT INTO replies (message_id, invitation_id, raw_sha256, result, reason, event_id, received_at, workspace_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, (SELECT workspace_id FROM invitations WHERE id = $2))
ON CONFLICT (message_id) DO NOTHING;

-- name: ReplySeen :one
SELECT EXISTS (SELECT 1 FROM replies WHERE message_id = $1);
