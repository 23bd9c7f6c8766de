package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consensus-md/consensus/internal/pgtest"
)

// lockWaiters counts the backends of db's database waiting for a lock.
func lockWaiters(t *testing.T, db *pgx.Conn) int {
	t.Helper()
	var n int
	err := db.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRevokeIsAtomicWithWrites: while a test
// transaction holds the agreement's row lock, A posts agree and the
// operator revokes A. The revoke must not be acknowledged while the agree
// can still be stored: it waits for the same lock. Once the lock is
// released each commits in turn, and once the revoke has answered nothing
// more from A is stored (on this replica or another). The same holds for a
// claim in flight.
func TestRevokeIsAtomicWithWrites(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	replica := startServer(t, s.ReplicaOptions())
	c := s.create("Revoke race", s.future(), participantSpec{"A", "agent", true}, participantSpec{"B", "agent", true}, participantSpec{"C", "agent", false})
	a := s.agent(c.Participants[0].InvitationID).join()
	b := s.agent(c.Participants[1].InvitationID).join()
	expect(t, b.post("b-agree-0001", "agree", ""), 201, "")
	// C has a session but has not claimed yet.
	cAgent := s.agent(c.Participants[2].InvitationID)
	r := cAgent.exchange()
	expect(t, r, 200, "")
	cAgent.session = r.json(t)["sessionToken"].(string)

	ctx := context.Background()
	db, err := pgx.Connect(ctx, pgtest.ServiceURL(s.DatabaseURL))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	tx := holdInTx(t, s, `SELECT 1 FROM agreements WHERE id = $1 FOR UPDATE`, c.AgreementID)

	agreed := make(chan *response, 1)
	go func() { agreed <- a.post("a-agree-0001", "agree", "") }()
	waitFor(t, func() bool { return lockWaiters(t, db) >= 1 }) // the agree waits for the lock
	claimed := make(chan *response, 1)
	go func() {
		claimed <- cAgent.claim(map[string]any{"emailProof": cAgent.inv.EmailProof, "inbox": cAgent.inv.Inbox})
	}()
	waitFor(t, func() bool { return len(claimed) > 0 || lockWaiters(t, db) >= 2 })
	waiting := lockWaiters(t, db)

	revoked := make(chan *response, 2)
	go func() { revoked <- s.do("POST", "/api/v1/admin/participants/"+a.pid+"/revoke", operator(), nil) }()
	go func() {
		revoked <- replica.do("POST", "/api/v1/admin/participants/"+cAgent.inv.ParticipantID+"/revoke", operator(), nil)
	}()
	waitFor(t, func() bool { return len(revoked) > 0 || lockWaiters(t, db) >= waiting+2 })
	time.Sleep(50 * time.Millisecond)
	if len(revoked) > 0 {
		t.Fatalf("a revoke was acknowledged (%d) while a write of its participant waited for the agreement lock and could still be stored", (<-revoked).StatusCode)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	ra, rc := <-agreed, <-claimed
	for range 2 {
		expect(t, <-revoked, 200, "")
	}
	// The agree and the claim queued for the lock before the revokes, so
	// they were granted it first: each committed before its revoke. The
	// contract allows either order; what it forbids is a write stored after
	// its revoke was answered.
	if ra.StatusCode != http.StatusCreated && ra.StatusCode != http.StatusUnauthorized {
		t.Fatalf("agree: %d %s", ra.StatusCode, ra.body)
	}
	if rc.StatusCode != http.StatusOK && rc.StatusCode != http.StatusNotFound {
		t.Fatalf("claim: %d %s", rc.StatusCode, rc.body)
	}
	storedBefore := countEvents(t, db, a.pid)
	if (ra.StatusCode == http.StatusCreated) != (storedBefore == 1) {
		t.Fatalf("agree answered %d but %d events of A are stored", ra.StatusCode, storedBefore)
	}

	// After the revokes answered: refused everywhere, nothing stored.
	for _, srv := range []*server{s, replica} {
		a2 := &agent{s: srv, inv: a.inv, token: a.token, digest: a.digest, pid: a.pid}
		expect(t, a2.post("a-comment-0002", "comment", "still here?"), 401, "unauthorized")
		expect(t, a2.room(), 401, "unauthorized")
		c2 := &agent{s: srv, inv: cAgent.inv, session: cAgent.session}
		if r := c2.claim(map[string]any{"emailProof": cAgent.inv.EmailProof, "inbox": cAgent.inv.Inbox}); r.StatusCode != 404 {
			t.Fatalf("claim after the revoke: %d %s", r.StatusCode, r.body)
		}
	}
	if n := countEvents(t, db, a.pid); n != storedBefore {
		t.Fatalf("%d events of A stored after its revoke was acknowledged", n-storedBefore)
	}
	// The outcome follows the stored events: reached exactly when A's agree was stored.
	m := b.room().json(t)
	want := "pending"
	if storedBefore == 1 {
		want = "reached"
	}
	if got := m["outcome"].(map[string]any)["status"]; got != want {
		t.Fatalf("outcome %v with A's agree stored: %v", got, storedBefore == 1)
	}
}

func countEvents(t *testing.T, db *pgx.Conn, participantID string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE participant_id = $1`, participantID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// holdInTx runs statement (a lock) in a transaction of its own on s's
// database and returns that transaction, open: the test rolls it back to
// release what it holds, and the cleanup does so if the test ends first.
func holdInTx(t *testing.T, s *server, statement string, args ...any) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.ServiceURL(s.DatabaseURL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) }) // after a rollback by the test, a no-op
	if _, err := tx.Exec(ctx, statement, args...); err != nil {
		t.Fatal(err)
	}
	return tx
}
