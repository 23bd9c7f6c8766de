-- +goose Up

-- A reply is the same reply whatever its DKIM signature leaves unsigned:
-- besides its Message-ID, the reader keys it by the signature it was
-- accepted on (the b= value, over the signed header fields and the body
-- hash) and by its signed body hash (bh=) within its invitation. A copy
-- under a new Message-ID, or with a field added, then inserts no row, and
-- gets no event and no answer. NULL for a row without evidence (a message
-- refused unread before this migration): NULLs never conflict.
ALTER TABLE replies ADD COLUMN dkim_signature text, ADD COLUMN dkim_body_hash text;
CREATE UNIQUE INDEX replies_dkim_signature_key ON replies (dkim_signature);
CREATE UNIQUE INDEX replies_dkim_body_hash_key ON replies (invitation_id, dkim_body_hash);

-- Replies recorded before this column keep what they were accepted on:
-- the evidence of their event. A copy already recorded twice keeps its key
-- on the first only. (The indexes come first: an update of replies
-- queues the deferred check of event_id, after which CREATE INDEX on the
-- table is refused.) The owner is bound by row-level security, so the
-- statement runs in the service scope.
SELECT set_config('consensus.scope', 'service', true);
UPDATE replies r SET dkim_signature = s.signature
FROM (SELECT DISTINCT ON (e.evidence::jsonb #>> '{dkim,signature}') r2.message_id, e.evidence::jsonb #>> '{dkim,signature}' AS signature
      FROM replies r2 JOIN events e ON e.id = r2.event_id
      WHERE e.evidence IS NOT NULL
      ORDER BY e.evidence::jsonb #>> '{dkim,signature}', r2.received_at, r2.message_id) s
WHERE r.message_id = s.message_id;
UPDATE replies r SET dkim_body_hash = s.body_hash
FROM (SELECT DISTINCT ON (r2.invitation_id, e.evidence::jsonb #>> '{dkim,body_hash}') r2.message_id, e.evidence::jsonb #>> '{dkim,body_hash}' AS body_hash
      FROM replies r2 JOIN events e ON e.id = r2.event_id
      WHERE e.evidence IS NOT NULL
      ORDER BY r2.invitation_id, e.evidence::jsonb #>> '{dkim,body_hash}', r2.received_at, r2.message_id) s
WHERE r.message_id = s.message_id;

-- +goose Down
DROP INDEX replies_dkim_body_hash_key;
DROP INDEX replies_dkim_signature_key;
ALTER TABLE replies DROP COLUMN dkim_body_hash, DROP COLUMN dkim_signature;
