package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// heard records what an Observer is told.
type heard struct {
	mu  sync.Mutex
	got []string
}

func (h *heard) add(s string)                    { h.mu.Lock(); h.got = append(h.got, s); h.mu.Unlock() }
func (h *heard) EventStored(action string)       { h.add("event " + action) }
func (h *heard) OutcomeSettled(status string)    { h.add("outcome " + status) }
func (h *heard) DeliveryAttempted(result string) { h.add("delivery " + result) }
func (h *heard) String() string                  { h.mu.Lock(); defer h.mu.Unlock(); return strings.Join(h.got, ", ") }

// TestObserverHearsCommittedWritesOnly: a transaction that rolls back tells
// nothing; one that commits tells each write, after the commit; a write
// outside a transaction tells at once; an outcome already final is not
// told twice.
func TestObserverHearsCommittedWritesOnly(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	h := &heard{}
	st.SetObserver(h)
	ctx := context.Background()
	id, pid := agreement(t, st)
	event := func(seq int64, action string) store.Event {
		return store.Event{ID: uuid.New(), AgreementID: id, Seq: seq, ParticipantID: pid, Revision: 1, Action: action,
			IdempotencyKey: "key-" + action, CommandDigest: "sha256:c", CreatedAt: time.Now().UTC(), PrevHash: "", Hash: "h" + action}
	}
	rollback := errors.New("roll back")
	err := st.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.EventInsert(ctx, event(1, "comment")); err != nil {
			return err
		}
		if h.String() != "" {
			t.Errorf("told before the commit: %s", h)
		}
		return rollback
	})
	if err != rollback || h.String() != "" {
		t.Fatalf("after a rollback: %v, told %q", err, h)
	}
	err = st.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.EventInsert(ctx, event(1, "comment")); err != nil {
			return err
		}
		if err := tx.EventInsert(ctx, event(2, "agree")); err != nil {
			return err
		}
		_, err := tx.AgreementSetOutcome(ctx, id, room.Outcome{Status: room.StatusReached, DecidedAt: time.Now().UTC()})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "event comment, event agree, outcome reached"; h.String() != want {
		t.Fatalf("told %q, want %q", h, want)
	}
	if set, err := st.AgreementSetOutcome(ctx, id, room.Outcome{Status: room.StatusExpired, DecidedAt: time.Now().UTC()}); err != nil || set {
		t.Fatalf("second outcome: %v, %v", set, err)
	}
	if err := st.EventInsert(ctx, event(2, "disagree")); !errors.Is(err, room.ErrConflict) {
		t.Fatalf("taken seq: %v", err)
	}
	if want := "event comment, event agree, outcome reached"; h.String() != want {
		t.Fatalf("a refused write was told: %q", h)
	}
}

// TestOutboxDepthAndDeliveries: the depth counts queued and retrying
// messages; each mark tells its result.
func TestOutboxDepthAndDeliveries(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	h := &heard{}
	st.SetObserver(h)
	ctx := context.Background()
	id, _ := agreement(t, st)
	invs, err := st.InvitationListByAgreement(ctx, id) // the participant's, made with it
	if err != nil || len(invs) != 1 {
		t.Fatalf("invitations %+v, %v", invs, err)
	}
	inv := invs[0].ID
	now := time.Now().UTC()
	var ids []uuid.UUID
	for i := range 3 {
		m := store.OutboxMessage{ID: uuid.New(), InvitationID: inv, AgreementID: id, Recipient: "a@example.test", Subject: "s",
			MessageID: uuid.NewString() + "@test", SealedBody: []byte{byte(i)}, CreatedAt: now}
		if err := st.InTx(ctx, func(tx *store.Tx) error { return tx.OutboxInsert(ctx, m) }); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	depth := func() int64 {
		n, err := st.OutboxDepth(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := depth(); n != 3 {
		t.Fatalf("depth %d, want 3", n)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.OutboxMarkRetry(ctx, ids[0], "451 later", now.Add(time.Minute)))
	must(st.OutboxMarkSent(ctx, ids[1], "250 ok", now))
	must(st.OutboxMarkFailed(ctx, ids[2], "550 no"))
	if n := depth(); n != 1 {
		t.Fatalf("depth %d after one retry, one sent, one failed; want 1", n)
	}
	if want := "delivery retry, delivery sent, delivery failed"; h.String() != want {
		t.Fatalf("told %q, want %q", h, want)
	}
}

// TestSchemaCurrent: current on a migrated database; behind when a
// migration is missing, naming both versions; an unreachable database is
// an error too.
func TestSchemaCurrent(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SchemaCurrent(ctx); err != nil {
		t.Fatal(err)
	}
	if s := st.PoolStats(); s.MaxConns < 1 || s.TotalConns < 1 || s.AcquireCount < 1 {
		t.Fatalf("pool stats %+v", s)
	}
	// Forget the last migration, as a database one release behind has it.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var latest, previous int64 // numbers may leave gaps (a branch's migration numbered after main's)
	if err := conn.QueryRow(ctx, "DELETE FROM goose_db_version WHERE version_id = (SELECT max(version_id) FROM goose_db_version) RETURNING version_id").Scan(&latest); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT max(version_id) FROM goose_db_version WHERE is_applied").Scan(&previous); err != nil {
		t.Fatal(err)
	}
	err = st.SchemaCurrent(ctx)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("at version %d, this release needs %d", previous, latest)) {
		t.Fatalf("one migration behind: %v", err)
	}
	// A newer schema, left by a release that was rolled back, is current.
	if _, err := conn.Exec(ctx, "INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true), ($2, true)", latest, latest+1); err != nil {
		t.Fatal(err)
	}
	if err := st.SchemaCurrent(ctx); err != nil {
		t.Fatalf("a newer schema: %v", err)
	}
	// An unreachable database is not current.
	st.Close()
	if err := st.SchemaCurrent(ctx); err == nil {
		t.Fatal("a closed pool reported a current schema")
	}
}
