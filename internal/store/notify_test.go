package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/workspace"
)

// TestOutcomeEmailsAtMostOnce: the outcome email of a participant is
// queued once, with one email job, however many transactions queue the
// outcome's emails at once (replicas, retries): the unique key holds.
func TestOutcomeEmailsAtMostOnce(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	id, pid := pgtest.Agreement(t, st)
	p, err := st.ParticipantGet(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	mid := uuid.New()
	if err := st.InWorkspace(ctx, workspace.DefaultID, func(tx *store.Tx) error {
		return tx.OutboxInsert(ctx, store.OutboxMessage{ID: mid, InvitationID: p.InvitationID, AgreementID: id, Recipient: p.Email,
			Subject: "invitation", MessageID: mid.String() + "@consensus.test", SealedBody: []byte{1}, CreatedAt: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if set, err := st.AgreementSetOutcome(ctx, id, room.Outcome{Status: room.StatusExpired, DecidedAt: now}); err != nil || !set {
		t.Fatal(set, err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := store.QueueOutcome(ctx, st, id, now); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	list, err := st.OutboxListByAgreement(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []store.OutboxMessage
	for _, m := range list {
		if m.Kind == store.OutboxOutcome {
			outcomes = append(outcomes, m)
		}
	}
	if len(outcomes) != 1 || outcomes[0].MessageID != "outcome-"+pid.String()+"@consensus.test" || outcomes[0].Subject != "CONSENSUS.md: outcome expired: an agreement" {
		t.Fatalf("outcome emails %+v", outcomes)
	}
	var jobs int
	if err := store.Pool(st).QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'notice_email' AND queue = 'notice' AND args->>'outbox_id' = $1`, outcomes[0].ID.String()).Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if jobs != 1 {
		t.Fatalf("%d notice jobs for the outcome email, want 1 (on the notice queue, which the previous release does not work)", jobs)
	}
}
