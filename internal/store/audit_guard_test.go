package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/workspace"
)

// TestAuditGuardBindsTheTablesOwner: the service's role, which owns
// audit_entries, cannot take the append-only trigger out of the way (disable
// it, drop it, rewrite its function, drop it with the function), rewrite a
// column, or drop the table, once the table holds an entry; the entries are
// unchanged after every attempt. The guard is the event triggers of
// deploy/kubernetes/overlays/cloudnativepg/audit-guard.sql, which
// deploy/local/pg.sh installs in the cluster's template1.
func TestAuditGuardBindsTheTablesOwner(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ok, err := st.AuditGuardInstalled(ctx); err != nil || !ok {
		t.Fatalf("the audit guard is not installed in the test database (%v): deploy/local/pg.sh start installs it in template1", err)
	}
	ws := newWorkspace(t, st, "guarded")
	err = st.InWorkspace(ctx, ws, func(tx *store.Tx) error {
		_, err := tx.AuditAppend(ctx, store.AuditRecord{WorkspaceID: ws, At: time.Now().UTC().Truncate(time.Microsecond),
			Actor: workspace.Actor{Kind: workspace.ActorKey, ID: uuid.NewString(), Name: "ci"}, Action: "key.revoke",
			Targets: map[string]string{}, RequestID: "r", ClientAddress: "127.0.0.1", Result: "ok"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, pgtest.ServiceURL(dbURL))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var owner, me string
	if err := conn.QueryRow(ctx, `SELECT tableowner, current_user FROM pg_tables WHERE tablename = 'audit_entries'`).Scan(&owner, &me); err != nil || owner != me {
		t.Fatalf("the test connects as %s, the table's owner is %s (%v)", me, owner, err)
	}
	const replace = `CREATE OR REPLACE FUNCTION audit_entries_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN coalesce(NEW, OLD); END; $$`
	// evil rewrites the guard's note of the tables it guards, from within
	// the command it guards.
	const evil = `CREATE FUNCTION pg_temp.evil(text) RETURNS text LANGUAGE plpgsql AS $$ BEGIN
		PERFORM set_config('consensus_guard.audit_tables', '{}', true); RETURN 'agreement.create'; END; $$`
	for _, c := range []struct{ setup, ddl, then string }{
		{``, `ALTER TABLE audit_entries DISABLE TRIGGER audit_entries_append_only`, `UPDATE audit_entries SET action = 'agreement.create'`},
		{``, `ALTER TABLE audit_entries DISABLE TRIGGER ALL`, `DELETE FROM audit_entries`},
		{``, `DROP TRIGGER audit_entries_append_only ON audit_entries`, `DELETE FROM audit_entries`},
		{``, replace, `UPDATE audit_entries SET action = 'agreement.create'`},
		{``, `DROP FUNCTION audit_entries_refuse_change() CASCADE`, `DELETE FROM audit_entries`},
		{``, `ALTER TABLE audit_entries ALTER COLUMN action TYPE text USING 'agreement.create'`, ``},
		{evil, `ALTER TABLE audit_entries ALTER COLUMN action TYPE text USING pg_temp.evil(action)`, ``},
		{`SET consensus_guard.audit_tables = '{}'`, `ALTER TABLE audit_entries DISABLE TRIGGER audit_entries_append_only`, `DELETE FROM audit_entries`},
		{``, `ALTER TABLE audit_entries RENAME TO audit_entries_old`, ``},
		{``, `DROP TABLE audit_entries`, ``},
		{``, `DROP SCHEMA public CASCADE`, ``},
		{``, `DROP OWNED BY current_user CASCADE`, ``},
	} {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c.setup != "" {
			if _, err := tx.Exec(ctx, c.setup); err != nil {
				t.Fatalf("%s: %v", c.setup, err)
			}
		}
		_, err = tx.Exec(ctx, c.ddl)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
			t.Errorf("%s: %v, want refused (42501)", c.ddl, err)
			if err == nil && c.then != "" {
				if tag, err := tx.Exec(ctx, c.then); err == nil {
					t.Errorf("  and then %s: %s", c.then, tag)
				}
			}
		}
		_ = tx.Rollback(ctx)
	}
	var action string
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*), min(action) FROM audit_entries WHERE workspace_id = $1`, ws).Scan(&n, &action); err != nil || n != 1 || action != "key.revoke" {
		t.Fatalf("after the attempts: %d entries, %q (%v)", n, action, err)
	}
}
