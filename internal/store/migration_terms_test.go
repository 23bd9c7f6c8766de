package store_test

import (
	"context"
	"database/sql"
	"io/fs"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/room"
)

// termsMigration is the migration that adds revisions.terms_digest.
const termsMigration = 3

// TestMigrationBackfillsTermsDigest: revisions locked before the terms
// digest existed get, from the migration's SQL, exactly the digest the
// service computes, for text that exercises every escaping rule of RFC 8785.
func TestMigrationBackfillsTermsDigest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The test writes rows as the service's participant paths do, in
	// every workspace at once.
	url := pgtest.ServiceURL(pgtest.URL(t))
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	migrations, err := fs.Sub(consensus.Migrations, "db/migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, termsMigration-1); err != nil {
		t.Fatal(err)
	}
	revs := []room.Revision{
		{Title: "Q3 & Q4 <plan> \u2028 launch 🚀 \"quoted\" back\\slash", Objective: "line\nfeed\ttab\rreturn\b\f\u0001\u001f\u007f é ü 日本 /slash",
			Rules: []string{"a", "\u2029", "x/y", "\\u0041 stays", "emoji 😀"}},
		{Title: "t", Objective: "o", Rules: []string{}},
		{Title: "nil rules", Objective: "o"},
	}
	ids := make([]uuid.UUID, len(revs))
	for i := range revs {
		ids[i] = uuid.New()
		revs[i].Schema, revs[i].AgreementID, revs[i].Revision = "https://consensus.md/schemas/agreement/v1", ids[i].String(), 1
		revs[i].DecisionRule, revs[i].Deadline, revs[i].LockedAt, revs[i].Issuer = room.DecisionRule, "2026-12-31T00:00:00Z", "2026-12-01T00:00:00Z", "https://consensus.md"
		insertOldRevision(t, db, ids[i], revs[i])
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	for i, r := range revs {
		want, err := room.TermsDigest(r)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := db.QueryRowContext(ctx, `SELECT terms_digest FROM revisions WHERE agreement_id = $1`, ids[i]).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("revision %d: the migration computed %s, the service %s", i, got, want)
		}
	}
}

// insertOldRevision stores r as a revision locked before the terms digest.
func insertOldRevision(t *testing.T, db *sql.DB, id uuid.UUID, r room.Revision) {
	t.Helper()
	canonical, digest, err := canon.DigestOf(r)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := db.Exec(`INSERT INTO agreements (id, deadline, created_at) VALUES ($1, $2, $3)`, id, now.Add(time.Hour), now); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO revisions (agreement_id, number, canonical_json, markdown, revision_digest, markdown_digest, locked_at)
		VALUES ($1, 1, $2, '# x', $3, $3, $4)`, id, string(canonical), digest, now); err != nil {
		t.Fatal(err)
	}
}
