-- +goose Up

-- The evidence of an event recorded from a reply to an invitation email:
-- the canonical JSON of the message's Message-ID, SHA-256, DKIM result,
-- signed header fields and the key record fetched. NULL for an event posted
-- over HTTP.
ALTER TABLE events ADD COLUMN evidence text;

-- Every reply the reader acted on, one row per Message-ID: a reply seen
-- again is ignored, and the answer email is queued in the transaction that
-- writes this row, so each reply gets exactly one.
CREATE TABLE replies (
    message_id    text PRIMARY KEY,
    invitation_id uuid NOT NULL REFERENCES invitations (id),
    raw_sha256    text NOT NULL,
    result        text NOT NULL CHECK (result IN ('recorded', 'refused')),
    reason        text NOT NULL DEFAULT '',
    -- Deferred: an append writes the reply before the batch of its events.
    event_id      uuid REFERENCES events (id) DEFERRABLE INITIALLY DEFERRED,
    received_at   timestamptz NOT NULL,
    workspace_id  uuid NOT NULL REFERENCES workspaces (id)
);

-- Each reply belongs to its invitation's workspace, and row-level security
-- binds it as it binds every other workspace-owned table.
ALTER TABLE replies ENABLE ROW LEVEL SECURITY;
ALTER TABLE replies FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_rows ON replies
    USING ((SELECT current_setting('consensus.scope', true)) = 'service'
           OR workspace_id = (SELECT nullif(current_setting('consensus.workspace_id', true), '')::uuid));

CREATE INDEX replies_invitation_idx ON replies (invitation_id);

ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check CHECK (kind IN ('invitation', 'revision', 'answer'));

-- +goose Down
ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
DELETE FROM outbox WHERE kind = 'answer';
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check CHECK (kind IN ('invitation', 'revision'));
DROP TABLE replies;
ALTER TABLE events DROP COLUMN evidence;
