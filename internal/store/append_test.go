package store_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// claim gives participant pid a token hash and returns it.
func claim(t *testing.T, st *store.Store, pid uuid.UUID) []byte {
	t.Helper()
	tokenHash := uuid.New()
	if ok, err := st.ParticipantClaim(context.Background(), pid, store.Claim{BindingJSON: "{}", BindingDigest: "d", TokenHash: tokenHash[:], ClaimedAt: time.Now()}); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	return tokenHash[:]
}

// appendEvent appends e through Append with the participant's token hash,
// failing the test on any error, and returns the state the append read.
func appendEvent(t *testing.T, st *store.Store, tokenHash []byte, e store.Event, w store.AppendWrite) *store.AppendState {
	t.Helper()
	var read *store.AppendState
	err := appendOne(context.Background(), st, store.AppendRequest{TokenHash: tokenHash, IdempotencyKey: e.IdempotencyKey, WithRevision: true},
		func(s *store.AppendState) (store.AppendWrite, error) {
			read = s
			w.Event = &e
			return w, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return read
}

func TestAppendReadsUnderTheLockAndWritesCounters(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	id, pid := agreement(t, st)
	tokenHash := claim(t, st, pid)
	before, err := st.AgreementGet(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	comment := store.Event{ID: uuid.New(), AgreementID: id, Seq: 1, ParticipantID: pid, Revision: 1, Action: room.ActionComment, Body: "hi",
		IdempotencyKey: "k1", CommandDigest: "sha256:c1", CreatedAt: now, PrevHash: canon.ZeroHash, Hash: "h1"}
	s := appendEvent(t, st, tokenHash, comment, store.AppendWrite{})
	if s.Agreement.ID != id || s.Agreement.Head != (store.ChainHead{Hash: canon.ZeroHash}) || s.Prior != nil || s.Revision == nil || s.Revision.Number != 1 ||
		s.Revision.RevisionDigest != "sha256:r" || len(s.Roster) != 1 || s.Roster[0].ID != pid || !s.Roster[0].Required {
		t.Fatalf("state before the first event: %+v", s)
	}
	if m := s.Holder; m == nil || m.ID != pid || m.AgreementID != id || !bytes.Equal(m.TokenHash, tokenHash) || m.EventsOn(1) != 0 || m.Decision != nil || m.RevokedAt != nil {
		t.Fatalf("the token's holder: %+v", m)
	}

	agree := store.Event{ID: uuid.New(), AgreementID: id, Seq: 2, ParticipantID: pid, Revision: 1, Action: room.ActionAgree,
		IdempotencyKey: "k2", CommandDigest: "sha256:c2", CreatedAt: now, PrevHash: "h1", Hash: "h2"}
	reached := room.Outcome{Status: room.StatusReached, DecidedAt: now, DecidingEventID: agree.ID.String()}
	s = appendEvent(t, st, tokenHash, agree, store.AppendWrite{Outcome: &reached,
		Artifact: &store.Artifact{AgreementID: id, Revision: 1, Body: []byte("# done\n"), SHA256: "a1", FinalizedAt: now}})
	if s.Agreement.Head != (store.ChainHead{Seq: 1, Hash: "h1"}) || s.Agreement.Version != before.Version+1 {
		t.Fatalf("state before the second event: %+v", s.Agreement)
	}
	if m := s.Holder; m.EventsOn(1) != 1 || m.EventsOn(2) != 0 {
		t.Fatalf("counter after one comment: %+v", m)
	}

	a, err := st.AgreementGet(ctx, id)
	if err != nil || a.Version != before.Version+2 || a.Head != (store.ChainHead{Seq: 2, Hash: "h2"}) ||
		a.Outcome.Status != room.StatusReached || a.Outcome.DecidingEventID != agree.ID.String() {
		t.Fatalf("agreement after two appends: %+v, %v", a, err)
	}
	roster, err := st.ParticipantRoster(ctx, id)
	if err != nil || len(roster) != 1 || roster[0].State != "decided" || roster[0].EventsOn(1) != 2 {
		t.Fatalf("roster %+v, %v", roster, err)
	}
	d, ok := roster[0].DecisionEvent()
	d.CreatedAt = d.CreatedAt.UTC()
	if !ok || d != (room.Event{ID: agree.ID.String(), Seq: 2, ParticipantID: pid.String(), Revision: 1, Action: room.ActionAgree, CreatedAt: now}) {
		t.Fatalf("decision %+v", d)
	}

	rs, err := st.RoomRead(ctx, store.RoomRequest{AgreementID: id, After: 1, WithRevision: true, WithArtifact: true})
	if err != nil || rs.Agreement.Version != a.Version || len(rs.Events) != 1 || !sameEvent(rs.Events[0], agree) ||
		rs.Revision == nil || rs.Artifact == nil || *rs.Artifact != (store.ArtifactMeta{SHA256: "a1", Bytes: 7}) || len(rs.Roster) != 1 {
		t.Fatalf("room read %+v, %v", rs, err)
	}
	if rs, err := st.RoomRead(ctx, store.RoomRequest{AgreementID: id, After: 2}); err != nil || len(rs.Events) != 0 || rs.Revision != nil || rs.Artifact != nil {
		t.Fatalf("room read of nothing new %+v, %v", rs, err)
	}
	if _, err := st.RoomRead(ctx, store.RoomRequest{AgreementID: uuid.New()}); !errors.Is(err, room.ErrNotFound) {
		t.Fatalf("room read of a missing agreement: %v", err)
	}

	// The key is found again, under the lock.
	err = appendOne(ctx, st, store.AppendRequest{TokenHash: tokenHash, IdempotencyKey: "k1"}, func(s *store.AppendState) (store.AppendWrite, error) {
		if s.Prior == nil || !sameEvent(*s.Prior, comment) || s.Revision != nil {
			t.Errorf("replay state %+v", s)
		}
		return store.AppendWrite{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A revocation is seen; an unknown token locks nothing and finds no one.
	if _, err := st.ParticipantRevoke(ctx, pid, now); err != nil {
		t.Fatal(err)
	}
	for _, hash := range [][]byte{tokenHash, []byte("unknown")} {
		err = appendOne(ctx, st, store.AppendRequest{TokenHash: hash, IdempotencyKey: "k9", WithRevision: true}, func(s *store.AppendState) (store.AppendWrite, error) {
			revoked := s.Holder != nil && s.Holder.RevokedAt != nil
			if !revoked && (s.Holder != nil || s.Agreement.ID != uuid.Nil || len(s.Roster) != 0 || s.Revision != nil) {
				t.Errorf("state for an unknown token: %+v", s)
			}
			return store.AppendWrite{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestAppendRollsBack(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	id, pid := agreement(t, st)
	tokenHash := claim(t, st, pid)
	before, _ := st.AgreementGet(ctx, id)
	boom := errors.New("boom")
	err := appendOne(ctx, st, store.AppendRequest{TokenHash: tokenHash, IdempotencyKey: "k1"}, func(*store.AppendState) (store.AppendWrite, error) {
		return store.AppendWrite{}, boom
	})
	if err != boom {
		t.Fatalf("decide's error came back as %v", err)
	}
	// A statement that fails in the write round trip rolls everything back:
	// seq 1 twice.
	now := time.Now().UTC().Truncate(time.Microsecond)
	e := store.Event{ID: uuid.New(), AgreementID: id, Seq: 1, ParticipantID: pid, Revision: 1, Action: room.ActionComment, Body: "x",
		IdempotencyKey: "k1", CommandDigest: "c", CreatedAt: now, PrevHash: canon.ZeroHash, Hash: "h1"}
	appendEvent(t, st, tokenHash, e, store.AppendWrite{})
	dup := e
	dup.ID, dup.IdempotencyKey = uuid.New(), "k2"
	for range 3 { // the connection goes back to the pool clean each time
		err = appendOne(ctx, st, store.AppendRequest{TokenHash: tokenHash, IdempotencyKey: "k2"}, func(*store.AppendState) (store.AppendWrite, error) {
			return store.AppendWrite{Event: &dup}, nil
		})
		if !errors.Is(err, room.ErrConflict) {
			t.Fatalf("a taken seq: %v", err)
		}
	}
	a, _ := st.AgreementGet(ctx, id)
	roster, _ := st.ParticipantRoster(ctx, id)
	if a.Version != before.Version+1 || a.Head.Seq != 1 || roster[0].EventsOn(1) != 1 {
		t.Fatalf("a failed append left traces: %+v %+v", a, roster[0])
	}
	// An expiry alone.
	expired := room.Outcome{Status: room.StatusExpired, DecidedAt: now}
	err = appendOne(ctx, st, store.AppendRequest{TokenHash: tokenHash, IdempotencyKey: "k3"}, func(*store.AppendState) (store.AppendWrite, error) {
		return store.AppendWrite{Outcome: &expired}, nil
	})
	if a2, _ := st.AgreementGet(ctx, id); err != nil || a2.Outcome.Status != room.StatusExpired || a2.Version != a.Version+1 || a2.Head != a.Head {
		t.Fatalf("expiry: %+v, %v", a2, err)
	}
	// A write for another agreement than the one locked is refused.
	other := e
	other.AgreementID, other.ID, other.Seq, other.IdempotencyKey = uuid.New(), uuid.New(), 2, "k4"
	if err := appendOne(ctx, st, store.AppendRequest{TokenHash: tokenHash, IdempotencyKey: "k4"}, func(*store.AppendState) (store.AppendWrite, error) {
		return store.AppendWrite{Event: &other}, nil
	}); err == nil {
		t.Fatal("an event for another agreement was written")
	}
}

// An append told the agreement (a cache's) locks it by id and skips the
// roster when asked; a token whose owner is in another agreement than the
// one named is refused: nil Holder, nothing written.
func TestAppendByAgreementIDAndWithoutRoster(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	id, pid := agreement(t, st)
	other, _ := agreement(t, st)
	tokenHash := claim(t, st, pid)
	read := func(agreementID uuid.UUID) *store.AppendState {
		var got *store.AppendState
		err := appendOne(context.Background(), st, store.AppendRequest{TokenHash: tokenHash, AgreementID: agreementID, IdempotencyKey: "k", SkipRoster: true},
			func(s *store.AppendState) (store.AppendWrite, error) { got = s; return store.AppendWrite{}, nil })
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if s := read(id); s.Agreement.ID != id || s.Holder == nil || s.Holder.ID != pid || s.Roster != nil || s.Revision != nil {
		t.Fatalf("by its own agreement's id: %+v", s)
	}
	if s := read(other); s.Holder != nil {
		t.Fatalf("by another agreement's id the holder must be refused: %+v", s.Holder)
	}
}
