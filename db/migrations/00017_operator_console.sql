-- +goose Up

-- Operators as people who sign in to the web console with passkeys. An
-- operator's display name is what the console and the audit log show
-- beside the address.
ALTER TABLE operators ADD COLUMN display_name text NOT NULL DEFAULT ''
    CHECK (length(display_name) <= 100 AND display_name !~ '[[:cntrl:]]');

-- An enrollment link registers one passkey for one operator: single use,
-- valid until expires_at (a day). Only the SHA-256 of its token is kept.
-- When the link is emailed, the email is written here in the transaction
-- that creates the link (recipient, subject, the body sealed under the
-- server key and erased once sent) and a River job sends it; state and
-- attempts follow that delivery as the outbox's do.
CREATE TABLE operator_enrollments (
    id           uuid PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces (id),
    operator_id  uuid NOT NULL REFERENCES operators (id),
    token_hash   bytea NOT NULL UNIQUE CHECK (octet_length(token_hash) = 32),
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    used_at      timestamptz,
    recipient    text,
    subject      text,
    message_id   text UNIQUE,
    sealed_body  bytea,
    state        text CHECK (state IN ('queued', 'sent', 'retrying', 'failed')),
    attempts     integer NOT NULL DEFAULT 0,
    last_reply   text,
    sent_at      timestamptz
);
CREATE INDEX operator_enrollments_operator_idx ON operator_enrollments (operator_id);

-- An operator's passkeys: the credential as go-webauthn stores it (public
-- key, sign count, flags), found by its credential id at sign-in.
CREATE TABLE operator_passkeys (
    credential_id bytea PRIMARY KEY,
    workspace_id  uuid NOT NULL REFERENCES workspaces (id),
    operator_id   uuid NOT NULL REFERENCES operators (id),
    credential    jsonb NOT NULL,
    created_at    timestamptz NOT NULL,
    last_used_at  timestamptz
);
CREATE INDEX operator_passkeys_operator_idx ON operator_passkeys (operator_id);

-- Console sessions, server-side so that they can be ended: only the
-- SHA-256 of the cookie's token is kept. A session ends after twelve hours
-- without a request (last_seen_at), at sign-out, and with its operator's
-- removal, which deletes its rows in the same transaction.
CREATE TABLE operator_sessions (
    token_hash   bytea PRIMARY KEY CHECK (octet_length(token_hash) = 32),
    workspace_id uuid NOT NULL REFERENCES workspaces (id),
    operator_id  uuid NOT NULL REFERENCES operators (id),
    created_at   timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL
);
CREATE INDEX operator_sessions_operator_idx ON operator_sessions (operator_id);

-- A WebAuthn ceremony between its two requests: the challenge and what it
-- expects, used once (deleted when finished) and for five minutes at most.
-- A sign-in ceremony starts before anyone is known, so it has no
-- workspace; enrollment_id names the link an enrollment ceremony uses.
CREATE TABLE operator_ceremonies (
    id            uuid PRIMARY KEY,
    kind          text NOT NULL CHECK (kind IN ('enroll', 'signin')),
    enrollment_id uuid REFERENCES operator_enrollments (id),
    data          jsonb NOT NULL,
    expires_at    timestamptz NOT NULL
);
CREATE INDEX operator_ceremonies_expires_idx ON operator_ceremonies (expires_at);

-- The workspace wall of 00012 for the workspace-owned tables.
-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['operator_enrollments', 'operator_passkeys', 'operator_sessions'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format($p$CREATE POLICY workspace_rows ON %I
            USING ((SELECT current_setting('consensus.scope', true)) = 'service'
                   OR workspace_id = (SELECT nullif(current_setting('consensus.workspace_id', true), '')::uuid))$p$, t);
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE operator_ceremonies;
DROP TABLE operator_sessions;
DROP TABLE operator_passkeys;
DROP TABLE operator_enrollments;
ALTER TABLE operators DROP COLUMN display_name;
