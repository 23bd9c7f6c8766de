package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/workspace"
)

// replySignatureMigration keys replies by their DKIM signature.
const replySignatureMigration = 26

// TestMigrationKeysEarlierReplies: replies recorded before the migration
// get the signature and body hash of their event's evidence, so a copy of
// one is seen before; where a copy was already recorded twice (as it could
// be before), only the first keeps the key and the migration still
// applies.
func TestMigrationKeysEarlierReplies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := pgtest.URL(t)
	st, err := store.Open(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	agreement, participant := pgtest.Agreement(t, st)
	p, err := st.ParticipantGet(ctx, participant)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(pgtest.ServiceURL(base))
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	migrations, err := fs.Sub(consensus.Migrations, "db/migrations")
	if err != nil {
		t.Fatal(err)
	}
	prov, err := goose.NewProvider(goose.DialectPostgres, db, migrations)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prov.DownTo(ctx, replySignatureMigration-1); err != nil {
		t.Fatal(err)
	}
	// The first reply, the same message recorded again under another
	// Message-ID, and its body signed again.
	replies := []struct{ messageID, signature, bodyHash string }{
		{"<first@example.test>", "c2lnLWE=", "Ym9keQ=="},
		{"<replayed@example.test>", "c2lnLWE=", "Ym9keQ=="},
		{"<resigned@example.test>", "c2lnLWI=", "Ym9keQ=="},
	}
	t0 := time.Now().UTC().Truncate(time.Second)
	for i, r := range replies {
		insertOldReply(t, db, agreement, p.ID, p.InvitationID, i+1, r.messageID, r.signature, r.bodyHash, t0.Add(time.Duration(i)*time.Second))
	}
	if _, err := prov.Up(ctx); err != nil {
		t.Fatalf("the migration does not apply over a reply recorded twice: %v", err)
	}
	want := []struct{ signature, bodyHash sql.NullString }{
		{sql.NullString{String: "c2lnLWE=", Valid: true}, sql.NullString{String: "Ym9keQ==", Valid: true}},
		{},
		{sql.NullString{String: "c2lnLWI=", Valid: true}, sql.NullString{}},
	}
	for i, r := range replies {
		var sig, bh sql.NullString
		if err := db.QueryRowContext(ctx, `SELECT dkim_signature, dkim_body_hash FROM replies WHERE message_id = $1`, r.messageID).Scan(&sig, &bh); err != nil {
			t.Fatal(err)
		}
		if sig != want[i].signature || bh != want[i].bodyHash {
			t.Errorf("%s: signature %v, body hash %v; want %v, %v", r.messageID, sig, bh, want[i].signature, want[i].bodyHash)
		}
	}
	seen, err := st.ReplySeen(ctx, store.Reply{MessageID: "<new@example.test>", InvitationID: p.InvitationID, DKIMSignature: "c2lnLWI="})
	if err != nil || !seen {
		t.Errorf("a copy of an earlier reply under a new Message-ID: seen %v, %v", seen, err)
	}
}

// insertOldReply stores, as the service did before the migration, a
// recorded reply and its event carrying evidence with signature and
// bodyHash.
func insertOldReply(t *testing.T, db *sql.DB, agreement, participant, invitation uuid.UUID, seq int, messageID, signature, bodyHash string, at time.Time) {
	t.Helper()
	event := uuid.New()
	evidence := fmt.Sprintf(`{"dkim":{"body_hash":%q,"signature":%q},"kind":"dkim-reply","message_id":%q}`, bodyHash, signature, messageID)
	if _, err := db.Exec(`INSERT INTO events (id, agreement_id, seq, participant_id, revision, action, body, idempotency_key, command_digest,
		created_at, prev_hash, hash, workspace_id, evidence) VALUES ($1, $2, $3, $4, 1, 'comment', 'a comment', $5, 'sha256:c', $6, 'sha256:p', 'sha256:h', $7, $8)`,
		event, agreement, seq, participant, fmt.Sprintf("reply:%d", seq), at, workspace.DefaultID, evidence); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO replies (message_id, invitation_id, raw_sha256, result, reason, event_id, received_at, workspace_id)
		VALUES ($1, $2, 'raw', 'recorded', '', $3, $4, $5)`, messageID, invitation, event, at, workspace.DefaultID); err != nil {
		t.Fatal(err)
	}
}
