package stress

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// tables lists the tables of the public schema.
func tables(t testing.TB, db *pgxpool.Pool) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return out
}

// tableDigests is, per table, its row count and a digest of every row's
// text (all columns) in a stable order: the tables a refused request must
// leave alone.
func tableDigests(t testing.TB, db *pgxpool.Pool) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range tables(t, db) {
		if strings.HasPrefix(name, "river_") {
			// The job queue's own tables change on their own (its leader,
			// periodic sweeps); a job a request queued has its outbox or
			// delivery row, which is compared.
			continue
		}
		if strings.HasPrefix(name, "log_") {
			// The transparency log integrates on its own, about every
			// second, the rooms changed before: it mirrors the room tables,
			// which are compared.
			continue
		}
		var n int64
		var d string
		q := fmt.Sprintf(`SELECT count(*), coalesce(md5(string_agg(x::text, E'\n' ORDER BY x::text)), '') FROM %q x`, name)
		switch name {
		case "audit_entries":
			// A refused operator request is audited with its result, as
			// every operator action is: only entries of actions that
			// succeeded count as a change.
			q = `SELECT count(*), coalesce(md5(string_agg(x::text, E'\n' ORDER BY x::text)), '') FROM audit_entries x WHERE result = 'ok'`
		case "workspaces":
			// The audit chain's head moves with every entry, refused or not.
			q = `SELECT count(*), coalesce(md5(string_agg((x.id, x.name, x.created_at)::text, E'\n' ORDER BY x.id)), '') FROM workspaces x`
		}
		if err := db.QueryRow(context.Background(), q).Scan(&n, &d); err != nil {
			t.Fatal(err)
		}
		out[name] = fmt.Sprintf("%d rows %s", n, d)
	}
	return out
}

// changedTables names the tables whose digest differs.
func changedTables(before, after map[string]string) []string {
	var out []string
	for k, v := range after {
		if before[k] != v {
			out = append(out, fmt.Sprintf("%s (%s → %s)", k, before[k], v))
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k+" (gone)")
		}
	}
	sort.Strings(out)
	return out
}

// settleOutbox waits until no invitation email is queued or retrying, so
// the outbox worker changes nothing while a test compares digests.
func settleOutbox(t testing.TB, db *pgxpool.Pool) {
	t.Helper()
	var n int
	ok := eventually(30*time.Second, func() bool {
		err := db.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE state IN ('queued', 'retrying')`).Scan(&n)
		return err == nil && n == 0
	})
	if !ok {
		t.Fatalf("the outbox still holds %d undelivered emails after 30s", n)
	}
}

// unchanged runs fn and reports (as an error naming what) every table it
// changed.
func unchanged(t testing.TB, db *pgxpool.Pool, what string, fn func()) {
	t.Helper()
	before := tableDigests(t, db)
	fn()
	if ch := changedTables(before, tableDigests(t, db)); len(ch) > 0 {
		t.Errorf("%s changed the database: %s", what, strings.Join(ch, ", "))
	}
}

// lockWaiters counts the backends of db's database that wait for a lock.
func lockWaiters(db *pgxpool.Pool) int {
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
		return -1
	}
	return n
}
