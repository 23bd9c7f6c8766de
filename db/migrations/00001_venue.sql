-- +goose Up

-- One agreement; its revisions live in their own table so a later revision 2
-- can coexist with decisions made on revision 1.
CREATE TABLE agreements (
    id                 uuid PRIMARY KEY,
    current_revision   integer NOT NULL DEFAULT 1,
    deadline           timestamptz NOT NULL,
    outcome_status     text NOT NULL DEFAULT 'pending'
        CHECK (outcome_status IN ('pending', 'reached', 'disagreed', 'no_consensus', 'expired')),
    outcome_decided_at timestamptz,
    outcome_event_id   uuid,
    created_at         timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX agreements_created_at_idx ON agreements (created_at DESC, id DESC);

-- Locked revisions are immutable: canonical_json holds the exact hashed bytes.
CREATE TABLE revisions (
    agreement_id    uuid NOT NULL REFERENCES agreements (id),
    number          integer NOT NULL CHECK (number >= 1),
    canonical_json  text NOT NULL,
    markdown        text NOT NULL,
    revision_digest text NOT NULL,
    markdown_digest text NOT NULL,
    locked_at       timestamptz NOT NULL,
    PRIMARY KEY (agreement_id, number)
);

CREATE TABLE participants (
    id             uuid PRIMARY KEY,
    agreement_id   uuid NOT NULL REFERENCES agreements (id),
    position       integer NOT NULL,
    display_name   text NOT NULL,
    kind           text NOT NULL CHECK (kind IN ('agent', 'human')),
    email          text NOT NULL,
    required       boolean NOT NULL,
    state          text NOT NULL DEFAULT 'invited' CHECK (state IN ('invited', 'claimed', 'decided')),
    -- set by the first claim; the canonical participant-binding/v1 bytes
    binding_json   text,
    binding_digest text,
    -- SHA-256 of the participant token (never the token itself)
    token_hash     bytea UNIQUE,
    claimed_at     timestamptz,
    revoked_at     timestamptz,
    UNIQUE (agreement_id, position)
);

-- Secrets and proofs are stored only as SHA-256 hashes. A resend replaces
-- both, so the previous email stops working.
CREATE TABLE invitations (
    id             uuid PRIMARY KEY,
    participant_id uuid NOT NULL UNIQUE REFERENCES participants (id),
    agreement_id   uuid NOT NULL REFERENCES agreements (id),
    secret_hash    bytea NOT NULL,
    proof_hash     bytea NOT NULL,
    expires_at     timestamptz NOT NULL,
    issued_at      timestamptz NOT NULL
);

CREATE TABLE sessions (
    token_hash    bytea PRIMARY KEY,
    invitation_id uuid NOT NULL REFERENCES invitations (id),
    expires_at    timestamptz NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX sessions_expires_at_idx ON sessions (expires_at);

-- Append-only room events with a hash chain per agreement.
CREATE TABLE events (
    id              uuid PRIMARY KEY,
    agreement_id    uuid NOT NULL REFERENCES agreements (id),
    seq             bigint NOT NULL CHECK (seq >= 1),
    participant_id  uuid NOT NULL REFERENCES participants (id),
    revision        integer NOT NULL,
    action          text NOT NULL
        CHECK (action IN ('comment', 'question', 'change_request', 'agree', 'disagree', 'abstain')),
    body            text NOT NULL,
    idempotency_key text NOT NULL,
    command_digest  text NOT NULL,
    created_at      timestamptz NOT NULL,
    prev_hash       text NOT NULL,
    hash            text NOT NULL,
    UNIQUE (agreement_id, seq),
    UNIQUE (participant_id, idempotency_key),
    FOREIGN KEY (agreement_id, revision) REFERENCES revisions (agreement_id, number)
);

CREATE INDEX events_participant_revision_idx ON events (participant_id, revision);

-- CONSENSUS.md, stored once when the outcome becomes reached.
CREATE TABLE artifacts (
    agreement_id uuid PRIMARY KEY REFERENCES agreements (id),
    revision     integer NOT NULL,
    body         bytea NOT NULL,
    sha256       text NOT NULL,
    finalized_at timestamptz NOT NULL
);

-- The invitation outbox, written in the transaction that locks the agreement.
-- sealed_body is AES-GCM under a key derived from CONSENSUS_TOKEN_KEY and is
-- erased once the message is sent or superseded.
CREATE TABLE outbox (
    id              uuid PRIMARY KEY,
    invitation_id   uuid NOT NULL REFERENCES invitations (id),
    agreement_id    uuid NOT NULL REFERENCES agreements (id),
    recipient       text NOT NULL,
    subject         text NOT NULL,
    message_id      text NOT NULL UNIQUE,
    sealed_body     bytea,
    state           text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'sent', 'retrying', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_reply      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz
);

CREATE INDEX outbox_due_idx ON outbox (next_attempt_at) WHERE state IN ('queued', 'retrying');
CREATE INDEX outbox_invitation_idx ON outbox (invitation_id, created_at);

CREATE TABLE outbox_attempts (
    outbox_id    uuid NOT NULL REFERENCES outbox (id),
    attempt      integer NOT NULL,
    attempted_at timestamptz NOT NULL,
    ok           boolean NOT NULL,
    reply        text NOT NULL,
    PRIMARY KEY (outbox_id, attempt)
);

-- +goose Down
DROP TABLE outbox_attempts;
DROP TABLE outbox;
DROP TABLE artifacts;
DROP TABLE events;
DROP TABLE sessions;
DROP TABLE invitations;
DROP TABLE participants;
DROP TABLE revisions;
DROP TABLE agreements;
