-- +goose Up

-- Addressed questions: a question or change request may name the
-- participants it asks (addressed_to, in the order sent), and a comment may
-- answer one (in_reply_to, an event of the same agreement). Both are part of
-- the event's command, so its digest and the chain cover them; null when the
-- event carries none.
ALTER TABLE events
    ADD COLUMN addressed_to uuid[] CHECK (addressed_to IS NULL OR cardinality(addressed_to) >= 1),
    ADD COLUMN in_reply_to  uuid;

-- +goose Down
ALTER TABLE events DROP COLUMN in_reply_to, DROP COLUMN addressed_to;
