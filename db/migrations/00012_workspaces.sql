-- +goose Up

-- Workspaces: every agreement, and everything reached through one, belongs
-- to exactly one workspace, as do the operators, API keys and audit entries
-- of the operator API. The workspace named default has a fixed id; it
-- receives every agreement that existed before workspaces, and the
-- bootstrap operator token (CONSENSUS_OPERATOR_TOKEN) acts as its owner.
--
-- audit_head_seq and audit_head_hash are the head of the workspace's audit
-- chain, kept here as agreements keep their event chain's head: appending
-- an entry locks this row (FOR NO KEY UPDATE, which no foreign-key check
-- waits for), reads the head, inserts the entry and moves the head.
CREATE TABLE workspaces (
    id              uuid PRIMARY KEY,
    name            text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 100 AND name !~ '[[:cntrl:]]'),
    created_at      timestamptz NOT NULL DEFAULT now(),
    audit_head_seq  bigint NOT NULL DEFAULT 0 CHECK (audit_head_seq >= 0),
    audit_head_hash text NOT NULL DEFAULT '0000000000000000000000000000000000000000000000000000000000000000'
);

INSERT INTO workspaces (id, name) VALUES ('00000000-0000-0000-0000-000000000001', 'default');

-- Every workspace-owned table gets workspace_id; existing rows are
-- default's. The constant default fills existing rows without rewriting the
-- table and is dropped at once: from now on each statement that inserts a
-- row names its workspace. An agreement takes the workspace of the
-- operator transaction that creates it; every other row takes its parent's
-- (agreement, invitation, outbox message or participant), read in the
-- inserting statement itself.
--
-- Only agreements reference workspaces: the rows under an agreement are
-- written by the participants' hot paths, and a foreign-key check per
-- event costs an append as much as 00005 measured. Nothing moves a row
-- between workspaces, and each row is inserted with its parent's.
ALTER TABLE agreements ADD COLUMN workspace_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001';
ALTER TABLE revisions ADD COLUMN workspace_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001';
ALTER TABLE participants ADD COLUMN workspace_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001';
ALTER TABLE invitations ADD COLUMN workspace_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001';
ALTER TABLE sessions ADD COLUMN workspace_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001';
ALTER TABLE events ADD COLUMN workspace_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001';
ALTER TABLE artifacts ADD COLUMN workspace_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001';
ALTER TABLE outbox ADD COLUMN workspace_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001';
ALTER TABLE outbox_attempts ADD COLUMN workspace_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001';
ALTER TABLE records ADD COLUMN workspace_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001';
ALTER TABLE webhooks ADD COLUMN workspace_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001';
ALTER TABLE webhook_deliveries ADD COLUMN workspace_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001';
ALTER TABLE agreements ALTER COLUMN workspace_id DROP DEFAULT;
ALTER TABLE revisions ALTER COLUMN workspace_id DROP DEFAULT;
ALTER TABLE participants ALTER COLUMN workspace_id DROP DEFAULT;
ALTER TABLE invitations ALTER COLUMN workspace_id DROP DEFAULT;
ALTER TABLE sessions ALTER COLUMN workspace_id DROP DEFAULT;
ALTER TABLE events ALTER COLUMN workspace_id DROP DEFAULT;
ALTER TABLE artifacts ALTER COLUMN workspace_id DROP DEFAULT;
ALTER TABLE outbox ALTER COLUMN workspace_id DROP DEFAULT;
ALTER TABLE outbox_attempts ALTER COLUMN workspace_id DROP DEFAULT;
ALTER TABLE records ALTER COLUMN workspace_id DROP DEFAULT;
ALTER TABLE webhooks ALTER COLUMN workspace_id DROP DEFAULT;
ALTER TABLE webhook_deliveries ALTER COLUMN workspace_id DROP DEFAULT;

ALTER TABLE agreements ADD CONSTRAINT agreements_workspace_fkey FOREIGN KEY (workspace_id) REFERENCES workspaces (id);

-- The operator's list: a workspace's agreements, newest first.
DROP INDEX agreements_created_at_idx;
CREATE INDEX agreements_workspace_created_idx ON agreements (workspace_id, created_at DESC, id DESC);

-- API keys for automation. The token (cok_…) is shown once; only its
-- SHA-256 is stored. A key with revoked_at set, or expires_at passed, is
-- refused. created_by names who made it: the bootstrap token, another key
-- or an operator (created_by_id is then that key's or operator's id).
-- last_used_at is written at most once a minute per key.
CREATE TABLE api_keys (
    id              uuid PRIMARY KEY,
    workspace_id    uuid NOT NULL REFERENCES workspaces (id),
    name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 100 AND name !~ '[[:cntrl:]]'),
    token_hash      bytea NOT NULL UNIQUE CHECK (octet_length(token_hash) = 32),
    scopes          text[] NOT NULL CHECK (scopes <@ ARRAY['agreements:read', 'agreements:write', 'participants:manage',
                                                           'keys:manage', 'operators:manage', 'audit:read']::text[]),
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz,
    revoked_at      timestamptz,
    last_used_at    timestamptz,
    created_by_kind text NOT NULL CHECK (created_by_kind IN ('bootstrap', 'key', 'operator', 'cli')),
    created_by_id   uuid
);
CREATE INDEX api_keys_workspace_idx ON api_keys (workspace_id, created_at, id);

-- The people who run a workspace. The web console signs them in; until
-- then a row records who owns a workspace. email is stored normalized
-- (trimmed, lower case), so one person is one row per workspace while they
-- are not removed.
CREATE TABLE operators (
    id           uuid PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces (id),
    email        text NOT NULL CHECK (email = lower(btrim(email)) AND email LIKE '%_@_%'),
    role         text NOT NULL CHECK (role IN ('owner', 'operator', 'viewer')),
    created_at   timestamptz NOT NULL,
    removed_at   timestamptz
);
CREATE UNIQUE INDEX operators_workspace_email_idx ON operators (workspace_id, email) WHERE removed_at IS NULL;

-- The audit log: one entry per operator action, append-only and
-- hash-chained per workspace. hash is the SHA-256 of the RFC 8785 bytes of
-- the entry as the API shows it without its hash (prev_hash included), so
-- an export can be checked without the database.
CREATE TABLE audit_entries (
    workspace_id   uuid NOT NULL REFERENCES workspaces (id),
    seq            bigint NOT NULL CHECK (seq >= 1),
    id             uuid NOT NULL UNIQUE,
    at             timestamptz NOT NULL,
    actor_kind     text NOT NULL CHECK (actor_kind IN ('bootstrap', 'key', 'operator', 'cli')),
    actor_id       text NOT NULL,
    actor_name     text NOT NULL,
    action         text NOT NULL,
    targets        jsonb NOT NULL,
    request_id     text NOT NULL,
    client_address text NOT NULL,
    result         text NOT NULL,
    prev_hash      text NOT NULL CHECK (prev_hash ~ '^[0-9a-f]{64}$'),
    hash           text NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$'),
    PRIMARY KEY (workspace_id, seq)
);

-- Append-only for every role, the table's owner included (a revoked
-- privilege would not bind the owner): UPDATE, DELETE and TRUNCATE raise.
-- +goose StatementBegin
CREATE FUNCTION audit_entries_refuse_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit entries are append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER audit_entries_append_only
    BEFORE UPDATE OR DELETE ON audit_entries
    FOR EACH ROW EXECUTE FUNCTION audit_entries_refuse_change();
CREATE TRIGGER audit_entries_no_truncate
    BEFORE TRUNCATE ON audit_entries
    FOR EACH STATEMENT EXECUTE FUNCTION audit_entries_refuse_change();

-- The webhook trigger writes its deliveries (and their River jobs, as
-- 00011 does) in the agreement's workspace.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhooks_enqueue() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    kinds text[] := '{}';
    queued bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhooks WHERE agreement_id = NEW.id AND disabled_at IS NULL) THEN
        RETURN NULL;
    END IF;
    IF NEW.head_seq > OLD.head_seq THEN
        kinds := kinds || 'room.event'::text;
    END IF;
    IF NEW.outcome_status IS DISTINCT FROM OLD.outcome_status THEN
        kinds := kinds || 'room.outcome'::text;
    END IF;
    IF NEW.current_revision IS DISTINCT FROM OLD.current_revision THEN
        kinds := kinds || 'room.revision'::text;
    END IF;
    WITH d AS (
        INSERT INTO webhook_deliveries (id, participant_id, agreement_id, invitation_id, type, seq, outcome, created_at, next_attempt_at, workspace_id)
        SELECT gen_random_uuid(), w.participant_id, NEW.id, p.invitation_id, k.kind, NEW.head_seq, NEW.outcome_status, clock_timestamp(), clock_timestamp(), NEW.workspace_id
        FROM participants p
        JOIN webhooks w ON w.participant_id = p.id AND w.disabled_at IS NULL
        CROSS JOIN unnest(kinds) WITH ORDINALITY AS k(kind, n)
        WHERE p.agreement_id = NEW.id AND p.revoked_at IS NULL
        ORDER BY k.n
        RETURNING id, participant_id, created_at
    ), j AS (
        INSERT INTO river_job (args, kind, max_attempts, queue)
        SELECT jsonb_build_object('delivery_id', d.id, 'participant_id', d.participant_id), 'webhook_delivery', 7, 'webhook'
        FROM d ORDER BY d.created_at
        RETURNING 1
    )
    SELECT count(*) INTO queued FROM j;
    IF queued > 0 THEN
        PERFORM pg_notify(current_schema() || '.river_insert', '{"queue": "webhook"}');
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- Row-level security, the second wall behind the service's own checks.
-- A row is visible when the transaction's workspace (consensus.workspace_id,
-- set with set_config(…, true) by every operator transaction) is its
-- workspace, or when the connection's scope (consensus.scope, a start-up
-- parameter of the service's pool) is 'service': the participant routes,
-- the key lookup and the background workers, which reach rows only by a
-- secret's hash or an id they already hold. A connection with neither set
-- sees no row and can write none. FORCE binds the tables' owner too, which
-- is the role the service connects as. Each setting is read once per
-- statement (the sub-selects become init plans), not once per row.
-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['agreements', 'revisions', 'participants', 'invitations', 'sessions', 'events',
                             'artifacts', 'outbox', 'outbox_attempts', 'records', 'webhooks', 'webhook_deliveries',
                             'api_keys', 'operators', 'audit_entries'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format($p$CREATE POLICY workspace_rows ON %I
            USING ((SELECT current_setting('consensus.scope', true)) = 'service'
                   OR workspace_id = (SELECT nullif(current_setting('consensus.workspace_id', true), '')::uuid))$p$, t);
    END LOOP;
END;
$$;
-- +goose StatementEnd

ALTER TABLE workspaces ENABLE ROW LEVEL SECURITY;
ALTER TABLE workspaces FORCE ROW LEVEL SECURITY;
CREATE POLICY workspace_rows ON workspaces
    USING ((SELECT current_setting('consensus.scope', true)) = 'service'
           OR id = (SELECT nullif(current_setting('consensus.workspace_id', true), '')::uuid));

-- +goose Down
DROP POLICY workspace_rows ON workspaces;
ALTER TABLE workspaces NO FORCE ROW LEVEL SECURITY;
ALTER TABLE workspaces DISABLE ROW LEVEL SECURITY;
-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['agreements', 'revisions', 'participants', 'invitations', 'sessions', 'events',
                             'artifacts', 'outbox', 'outbox_attempts', 'records', 'webhooks', 'webhook_deliveries'] LOOP
        EXECUTE format('DROP POLICY workspace_rows ON %I', t);
        EXECUTE format('ALTER TABLE %I NO FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I DISABLE ROW LEVEL SECURITY', t);
    END LOOP;
END;
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhooks_enqueue() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    kinds text[] := '{}';
    queued bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhooks WHERE agreement_id = NEW.id AND disabled_at IS NULL) THEN
        RETURN NULL;
    END IF;
    IF NEW.head_seq > OLD.head_seq THEN
        kinds := kinds || 'room.event'::text;
    END IF;
    IF NEW.outcome_status IS DISTINCT FROM OLD.outcome_status THEN
        kinds := kinds || 'room.outcome'::text;
    END IF;
    IF NEW.current_revision IS DISTINCT FROM OLD.current_revision THEN
        kinds := kinds || 'room.revision'::text;
    END IF;
    WITH d AS (
        INSERT INTO webhook_deliveries (id, participant_id, agreement_id, invitation_id, type, seq, outcome, created_at, next_attempt_at)
        SELECT gen_random_uuid(), w.participant_id, NEW.id, p.invitation_id, k.kind, NEW.head_seq, NEW.outcome_status, clock_timestamp(), clock_timestamp()
        FROM participants p
        JOIN webhooks w ON w.participant_id = p.id AND w.disabled_at IS NULL
        CROSS JOIN unnest(kinds) WITH ORDINALITY AS k(kind, n)
        WHERE p.agreement_id = NEW.id AND p.revoked_at IS NULL
        ORDER BY k.n
        RETURNING id, participant_id, created_at
    ), j AS (
        INSERT INTO river_job (args, kind, max_attempts, queue)
        SELECT jsonb_build_object('delivery_id', d.id, 'participant_id', d.participant_id), 'webhook_delivery', 7, 'webhook'
        FROM d ORDER BY d.created_at
        RETURNING 1
    )
    SELECT count(*) INTO queued FROM j;
    IF queued > 0 THEN
        PERFORM pg_notify(current_schema() || '.river_insert', '{"queue": "webhook"}');
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
ALTER TABLE agreements DROP COLUMN workspace_id;
ALTER TABLE revisions DROP COLUMN workspace_id;
ALTER TABLE participants DROP COLUMN workspace_id;
ALTER TABLE invitations DROP COLUMN workspace_id;
ALTER TABLE sessions DROP COLUMN workspace_id;
ALTER TABLE events DROP COLUMN workspace_id;
ALTER TABLE artifacts DROP COLUMN workspace_id;
ALTER TABLE outbox DROP COLUMN workspace_id;
ALTER TABLE outbox_attempts DROP COLUMN workspace_id;
ALTER TABLE records DROP COLUMN workspace_id;
ALTER TABLE webhooks DROP COLUMN workspace_id;
ALTER TABLE webhook_deliveries DROP COLUMN workspace_id;
DROP TABLE audit_entries;
DROP FUNCTION audit_entries_refuse_change();
DROP TABLE operators;
DROP TABLE api_keys;
CREATE INDEX agreements_created_at_idx ON agreements (created_at DESC, id DESC);
DROP TABLE workspaces;
