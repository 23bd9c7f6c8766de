package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The baselines' own tables, in their own database on the same cluster. The
// events table has the service's columns, widths and indexes (primary key,
// unique seq per agreement, unique key per participant; migration 00002
// dropped the participant and revision index), so an insert costs the
// database what the service's insert costs it; the foreign keys are left
// out (the minimal transaction).
const baselineSchema = `
CREATE TABLE agreements (
    id               uuid PRIMARY KEY,
    current_revision integer NOT NULL DEFAULT 1,
    outcome_status   text NOT NULL DEFAULT 'pending'
);
CREATE TABLE events (
    id              uuid PRIMARY KEY,
    agreement_id    uuid NOT NULL,
    seq             bigint NOT NULL,
    participant_id  uuid NOT NULL,
    revision        integer NOT NULL,
    action          text NOT NULL,
    body            text NOT NULL,
    idempotency_key text NOT NULL,
    command_digest  text NOT NULL,
    created_at      timestamptz NOT NULL,
    prev_hash       text NOT NULL,
    hash            text NOT NULL,
    UNIQUE (agreement_id, seq),
    UNIQUE (participant_id, idempotency_key)
);
CREATE SEQUENCE event_seq;
-- One row per participant token, looked up by its hash as a credential is.
CREATE TABLE tokens (
    token_hash     bytea PRIMARY KEY,
    participant_id uuid NOT NULL,
    agreement_id   uuid NOT NULL,
    revoked_at     timestamptz
);
`

// uuidExpr makes a deterministic uuid from an integer (pgbench variables are
// integers; the service's keys are uuids).
func uuidExpr(kind, n string) string {
	return fmt.Sprintf("('00000000-0000-4000-%s-' || lpad((%s)::text, 12, '0'))::uuid", kind, n)
}

// A 64-hex-digit value, as wide as the service's digests and hashes.
const hex64 = "5f2b8c1d9e3a47b6a0c4d8e2f1b3a5c7d9e0f2a4b6c8d0e2f4a6b8c0d2e4f6a8"

// appendScript is the minimal equivalent of an append: lock the agreement
// row, insert one event row, commit.
func appendScript(body string) string {
	return fmt.Sprintf(`\set aid random(1, :agreements)
\set pid random(1, :participants)
BEGIN;
SELECT current_revision, outcome_status FROM agreements WHERE id = %s FOR UPDATE;
INSERT INTO events (id, agreement_id, seq, participant_id, revision, action, body, idempotency_key, command_digest, created_at, prev_hash, hash)
VALUES (gen_random_uuid(), %s, nextval('event_seq'), %s, 1, 'comment', '%s', 'bench-' || gen_random_uuid()::text, '%s', now(), '%s', '%s');
COMMIT;
`, uuidExpr("8000", ":aid"), uuidExpr("8000", ":aid"), uuidExpr("9000", "(:aid - 1) * :participants + :pid"),
		strings.ReplaceAll(body, "'", "''"), hex64, hex64, hex64)
}

// lookupScript is one indexed lookup by a token hash, as pgbench -S does by
// primary key.
const lookupScript = `\set k random(1, :tokens)
SELECT participant_id, agreement_id, revoked_at FROM tokens WHERE token_hash = sha256(int4send(:k::integer));
`

// setupBaseline creates the tables, seeds them as large as the service's
// (same agreements and participants, as many events as the fill stores) and
// writes the pgbench scripts into dir.
func setupBaseline(ctx context.Context, cl *cluster, cfg config, dir string, events int) (appendPath, lookupPath string, err error) {
	conn, err := pgx.Connect(ctx, cl.url(baselineDB))
	if err != nil {
		return "", "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, baselineSchema); err != nil {
		return "", "", fmt.Errorf("baseline schema: %w", err)
	}
	steps := []string{
		fmt.Sprintf(`INSERT INTO agreements (id) SELECT %s FROM generate_series(1, %d) g`, uuidExpr("8000", "g"), cfg.Agreements),
		fmt.Sprintf(`INSERT INTO tokens SELECT sha256(int4send(g)), %s, %s, NULL FROM generate_series(1, %d) g`,
			uuidExpr("9000", "g"), uuidExpr("8000", fmt.Sprintf("(g - 1) / %d + 1", cfg.Parts)), cfg.Agreements*cfg.Parts),
		fmt.Sprintf(`INSERT INTO events SELECT gen_random_uuid(), %s, nextval('event_seq'), %s, 1, 'comment', $1, 'seed-' || g, '%s', now(), '%s', '%s' FROM generate_series(1, %d) g`,
			uuidExpr("8000", fmt.Sprintf("g %% %d + 1", cfg.Agreements)), uuidExpr("9000", fmt.Sprintf("g %% %d + 1", cfg.Agreements*cfg.Parts)), hex64, hex64, hex64, events),
		`VACUUM ANALYZE`,
	}
	for _, s := range steps {
		var args []any
		if strings.Contains(s, "$1") {
			args = append(args, commentText(0))
		}
		if _, err := conn.Exec(ctx, s, args...); err != nil {
			return "", "", fmt.Errorf("seed baseline: %w", err)
		}
	}
	appendPath = filepath.Join(dir, "append.sql")
	lookupPath = filepath.Join(dir, "lookup.sql")
	if err := os.WriteFile(appendPath, []byte(appendScript(commentText(0))), 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(lookupPath, []byte(lookupScript), 0o644); err != nil {
		return "", "", err
	}
	return appendPath, lookupPath, nil
}
