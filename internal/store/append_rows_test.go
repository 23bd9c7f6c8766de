package store_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// One batch writes every kind of append at once, each to its own row: a
// signed comment beside an unsigned decision that reaches the outcome (with
// its artifact), and a replay that finds its stored event under its key.
// The batch's statements carry all of them in parallel arrays, so each row
// must get its own values: a signature, an outcome and a decision land on
// exactly the append that made them.
func TestAppendBatchWritesEachAppendItsOwnRow(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	var ids, pids []uuid.UUID
	var reqs []store.AppendRequest
	for range 3 {
		id, pid := agreement(t, st)
		ids, pids = append(ids, id), append(pids, pid)
		reqs = append(reqs, store.AppendRequest{TokenHash: claim(t, st, pid), AgreementID: id, IdempotencyKey: "k"})
	}
	event := func(i int, action, hash string) store.Event {
		return store.Event{ID: uuid.New(), AgreementID: ids[i], Seq: 1, ParticipantID: pids[i], Revision: 1, Action: action,
			Body: "body " + hash, IdempotencyKey: "k", CommandDigest: "sha256:" + hash, CreatedAt: now, PrevHash: canon.ZeroHash, Hash: hash}
	}
	// The third participant stored its event under "k" before the batch.
	stored := event(2, room.ActionQuestion, "h-stored")
	stored.Signature = bytes.Repeat([]byte{7}, 64)
	appendEvent(t, st, reqs[2].TokenHash, stored, store.AppendWrite{})

	signed := event(0, room.ActionComment, "h-signed")
	signed.Signature = bytes.Repeat([]byte{9}, 64)
	agree := event(1, room.ActionAgree, "h-agree")
	reached := room.Outcome{Status: room.StatusReached, DecidedAt: now, DecidingEventID: agree.ID.String()}
	artifact := store.Artifact{AgreementID: ids[1], Revision: 1, Body: []byte("# done\n"), SHA256: "a1", FinalizedAt: now}
	var replayed *store.Event
	decides := []store.Decide{
		func(*store.AppendState) (store.AppendWrite, error) { return store.AppendWrite{Event: &signed}, nil },
		func(s *store.AppendState) (store.AppendWrite, error) {
			if len(s.Roster) != 1 || s.Roster[0].ID != pids[1] {
				t.Errorf("roster read in a batch: %+v", s.Roster)
			}
			return store.AppendWrite{Event: &agree, Outcome: &reached, Artifact: &artifact}, nil
		},
		func(s *store.AppendState) (store.AppendWrite, error) {
			replayed = s.Prior
			return store.AppendWrite{}, nil
		},
	}
	errs, alone, err := appendTogether(st, reqs, decides)
	if err != nil || errs[0] != nil || errs[1] != nil || errs[2] != nil || alone[0] || alone[1] || alone[2] {
		t.Fatalf("batch: %v, %v, alone %v", err, errs, alone)
	}
	if replayed == nil || !sameEvent(*replayed, stored) || !bytes.Equal(replayed.Signature, stored.Signature) {
		t.Fatalf("the replay read %+v, want %+v", replayed, stored)
	}

	for i, want := range []store.Event{signed, agree, stored} {
		rs, err := st.RoomRead(ctx, store.RoomRequest{AgreementID: ids[i], WithArtifact: true})
		if err != nil || len(rs.Events) != 1 || !sameEvent(rs.Events[0], want) || !bytes.Equal(rs.Events[0].Signature, want.Signature) {
			t.Fatalf("agreement %d: events %+v, %v", i, rs.Events, err)
		}
		a := rs.Agreement
		if a.Head != (store.ChainHead{Seq: 1, Hash: want.Hash}) {
			t.Errorf("agreement %d: head %+v", i, a.Head)
		}
		if got, wantStatus := a.Outcome.Status, map[bool]string{true: room.StatusReached, false: room.StatusPending}[i == 1]; got != wantStatus {
			t.Errorf("agreement %d: outcome %q, want %q", i, got, wantStatus)
		}
		if (rs.Artifact != nil) != (i == 1) {
			t.Errorf("agreement %d: artifact %+v", i, rs.Artifact)
		}
		roster, err := st.ParticipantRoster(ctx, ids[i])
		if err != nil || len(roster) != 1 || roster[0].EventsOn(1) != 1 {
			t.Fatalf("agreement %d: roster %+v, %v", i, roster, err)
		}
		if _, decided := roster[0].DecisionEvent(); decided != (i == 1) || (roster[0].State == "decided") != (i == 1) {
			t.Errorf("agreement %d: participant %+v", i, roster[0])
		}
	}
	a, err := st.AgreementGet(ctx, ids[1])
	if err != nil || a.Outcome.DecidingEventID != agree.ID.String() || !a.Outcome.DecidedAt.Equal(now) {
		t.Fatalf("the reached outcome: %+v, %v", a.Outcome, err)
	}
}
