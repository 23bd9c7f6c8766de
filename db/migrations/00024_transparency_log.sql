-- +goose Up

-- The transparency log (SPEC §21): one service-wide append-only Merkle log
-- of room milestones, hashed as RFC 6962 and served as C2SP tlog-tiles.
-- These tables belong to no workspace: the log is public, and only the
-- integrator (one replica at a time, under an advisory lock) writes them.

-- Each leaf's canonical consensus-log-leaf/v1 bytes at its index.
CREATE TABLE log_leaves (
    idx          bigint PRIMARY KEY CHECK (idx >= 0),
    agreement_id uuid NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('revision', 'head', 'record')),
    body         bytea NOT NULL
);
CREATE INDEX log_leaves_agreement_idx ON log_leaves (agreement_id, kind, idx);

-- The tree's stored hashes, indexed as golang.org/x/mod/sumdb/tlog's
-- StoredHashIndex numbers them: tiles and proofs are read from here.
CREATE TABLE log_hashes (
    idx  bigint PRIMARY KEY CHECK (idx >= 0),
    hash bytea NOT NULL CHECK (length(hash) = 32)
);

-- Every checkpoint the log signed, by tree size, and the cosignatures
-- witnesses returned for it (their signature lines, C2SP tlog-cosignature).
CREATE TABLE log_checkpoints (
    size       bigint PRIMARY KEY CHECK (size > 0),
    root       bytea NOT NULL CHECK (length(root) = 32),
    signed     text NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE TABLE log_cosignatures (
    size       bigint NOT NULL REFERENCES log_checkpoints (size),
    witness    text NOT NULL,
    line       text NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (size, witness)
);

-- What the log holds of each room: the last revision, head and whether
-- the record is in. An integration compares a room with its row here.
CREATE TABLE log_rooms (
    agreement_id uuid PRIMARY KEY,
    revision     integer NOT NULL,
    seq          bigint NOT NULL,
    head_hash    text NOT NULL,
    record       boolean NOT NULL
);

-- Each configured witness: the tree size it last cosigned, and its last
-- refusal or failure (null once it cosigns again).
CREATE TABLE log_witnesses (
    name          text PRIMARY KEY,
    size          bigint NOT NULL DEFAULT 0,
    failed_size   bigint,
    failure       text,
    refused       boolean NOT NULL DEFAULT false,
    updated_at    timestamptz NOT NULL
);

-- +goose Down
DROP TABLE log_witnesses;
DROP TABLE log_rooms;
DROP TABLE log_cosignatures;
DROP TABLE log_checkpoints;
DROP TABLE log_hashes;
DROP TABLE log_leaves;
