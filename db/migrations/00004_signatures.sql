-- +goose Up

-- Signed decisions and verifiable records.
--
-- public_key: the Ed25519 key a keyed claim bound (participant-binding/v2),
-- 32 raw bytes; null for a claim without a key. Every event of a keyed
-- participant carries its Ed25519 signature over the canonical room-command
-- bytes (64 raw bytes); other events carry none.
ALTER TABLE participants
    ADD COLUMN public_key bytea CHECK (public_key IS NULL OR octet_length(public_key) = 32);
ALTER TABLE events
    ADD COLUMN signature bytea CHECK (signature IS NULL OR octet_length(signature) = 64);

-- Every service key that has run, by its RFC 7638 thumbprint: the JWKS at
-- /.well-known/consensus-keys publishes them all, so a record signed before
-- a rotation still verifies.
CREATE TABLE signing_keys (
    kid        text PRIMARY KEY,
    public_key bytea NOT NULL CHECK (octet_length(public_key) = 32),
    created_at timestamptz NOT NULL
);

-- The consensus-record/v1 of a finished room, issued and signed once and
-- then served byte for byte.
CREATE TABLE records (
    agreement_id uuid PRIMARY KEY REFERENCES agreements (id),
    body         bytea NOT NULL,
    sha256       text NOT NULL,
    kid          text NOT NULL REFERENCES signing_keys (kid),
    issued_at    timestamptz NOT NULL
);

-- +goose Down
DROP TABLE records;
DROP TABLE signing_keys;
ALTER TABLE events DROP COLUMN signature;
ALTER TABLE participants DROP COLUMN public_key;
