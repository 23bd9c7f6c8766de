-- name: ReplyInsert :execrows
-- A reply acted on; one seen before inserts nothing (0 rows): the same
-- Message-ID, the same DKIM signature (b=), or the same signed body hash
-- (bh=) in the same invitation.
INSERT INTO replies (message_id, invitation_id, raw_sha256, result, reason, event_id, received_at, workspace_id, dkim_signature, dkim_body_hash)
VALUES ($1, $2, $3, $4, $5, $6, $7, (SELECT workspace_id FROM invitations WHERE id = $2), sqlc.narg('dkim_signature'), sqlc.narg('dkim_body_hash'))
ON CONFLICT DO NOTHING;

-- name: ReplySeen :one
-- Whether a reply was acted on, by any of the keys ReplyInsert refuses.
SELECT EXISTS (
    SELECT 1 FROM replies
    WHERE message_id = @message_id
       OR dkim_signature = sqlc.narg('dkim_signature')
       OR (invitation_id = @invitation_id AND dkim_body_hash = sqlc.narg('dkim_body_hash'))
);
