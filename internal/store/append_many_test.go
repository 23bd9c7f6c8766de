package store_test

import (
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

// appendTogether runs the appends with AppendMany: each append's own
// error, whether it was left out (Locked), and the transaction's error.
func appendTogether(st *store.Store, reqs []store.AppendRequest, decides []store.Decide) ([]error, []bool, error) {
	items := make([]*store.AppendItem, len(reqs))
	for i := range reqs {
		items[i] = &store.AppendItem{Request: reqs[i], Decide: decides[i]}
	}
	err := st.AppendMany(context.Background(), append([]*store.AppendItem(nil), items...), nil)
	errs, locked := make([]error, len(items)), make([]bool, len(items))
	for i, it := range items {
		errs[i], locked[i] = it.Err, it.Locked
	}
	return errs, locked, err
}

// appendOne is Append for a test that needs only its error.
func appendOne(ctx context.Context, st *store.Store, req store.AppendRequest, decide store.Decide) error {
	_, err := st.Append(ctx, req, decide)
	return err
}

// nextComment is decide for a comment on the head st read: what the venue
// does, minus the rules.
func nextComment(key string) store.Decide {
	return func(st *store.AppendState) (store.AppendWrite, error) {
		if st.Holder == nil {
			return store.AppendWrite{}, errors.New("no holder")
		}
		if st.Prior != nil {
			return store.AppendWrite{}, nil
		}
		a := st.Agreement
		e := store.Event{ID: uuid.New(), AgreementID: a.ID, Seq: a.Head.Seq + 1, ParticipantID: st.Holder.ID, Revision: 1,
			Action: room.ActionComment, Body: key, IdempotencyKey: key, CommandDigest: "sha256:" + key,
			CreatedAt: time.Now().UTC().Truncate(time.Microsecond), PrevHash: a.Head.Hash, Hash: canon.Digest([]byte(a.Head.Hash + key))}
		return store.AppendWrite{Event: &e}, nil
	}
}

// AppendMany judges each append alone: one refused, one writing nothing and
// one whose decide panics leave the others' events committed.
func TestAppendBatchIsolatesEachAppend(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	var reqs []store.AppendRequest
	var ids []uuid.UUID
	for range 5 {
		id, pid := agreement(t, st)
		ids = append(ids, id)
		reqs = append(reqs, store.AppendRequest{TokenHash: claim(t, st, pid), AgreementID: id, IdempotencyKey: "k", SkipRoster: true})
	}
	refused := errors.New("refused")
	decides := []store.Decide{
		nextComment("k"),
		func(*store.AppendState) (store.AppendWrite, error) { return store.AppendWrite{}, refused },
		func(*store.AppendState) (store.AppendWrite, error) { return store.AppendWrite{}, nil },
		func(*store.AppendState) (store.AppendWrite, error) { panic("bad decide") },
		nextComment("k"),
	}
	errs, _, err := appendTogether(st, reqs, decides)
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || !errors.Is(errs[1], refused) || errs[2] != nil || errs[3] == nil || errs[4] != nil {
		t.Fatalf("errors: %v", errs)
	}
	for i, want := range []int64{1, 0, 0, 0, 1} {
		a, err := st.AgreementGet(ctx, ids[i])
		if err != nil {
			t.Fatal(err)
		}
		if a.Head.Seq != want {
			t.Errorf("agreement %d: head %d, want %d", i, a.Head.Seq, want)
		}
	}
}

// twoAppends makes two agreements with a claimed participant each and
// returns them with a comment append request for each, under key "k".
func twoAppends(t *testing.T, st *store.Store) (idA, idB uuid.UUID, reqs []store.AppendRequest) {
	t.Helper()
	idA, pidA := agreement(t, st)
	idB, pidB := agreement(t, st)
	return idA, idB, []store.AppendRequest{
		{TokenHash: claim(t, st, pidA), AgreementID: idA, IdempotencyKey: "k", SkipRoster: true},
		{TokenHash: claim(t, st, pidB), AgreementID: idB, IdempotencyKey: "k", SkipRoster: true},
	}
}

// A statement that fails ends the whole transaction before its commit:
// nothing of it is stored.
func TestAppendBatchFailsWhole(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	idA, idB, reqs := twoAppends(t, st)
	broken := func(st *store.AppendState) (store.AppendWrite, error) {
		w, err := nextComment("k")(st)
		w.Event.ParticipantID = uuid.New() // no such participant: the insert fails
		return w, err
	}
	_, _, err := appendTogether(st, reqs, []store.Decide{nextComment("k"), broken})
	if err == nil {
		t.Fatal("a batch with a failing statement committed")
	}
	for _, id := range []uuid.UUID{idA, idB} {
		if a, err := st.AgreementGet(ctx, id); err != nil || a.Head.Seq != 0 {
			t.Fatalf("agreement %v after a failed batch: head %d, %v", id, a.Head.Seq, err)
		}
	}
}

// holdLock takes agreement id's lock in a transaction of its own until
// release is closed; the returned channel has that transaction's error.
func holdLock(t *testing.T, st *store.Store, id uuid.UUID, release <-chan struct{}) <-chan error {
	t.Helper()
	ctx := context.Background()
	locked, held := make(chan struct{}), make(chan error, 1)
	go func() {
		held <- st.InTx(ctx, func(tx *store.Tx) error {
			if _, err := tx.AgreementLock(ctx, id); err != nil {
				return err
			}
			close(locked)
			<-release
			return nil
		})
	}()
	<-locked
	return held
}

// AppendMany does not wait for a lock another transaction holds: that
// append is left out (Locked) and the others commit at once.
func TestAppendBatchLeavesALockedAgreementOut(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	idA, idB, reqs := twoAppends(t, st)
	release := make(chan struct{})
	held := holdLock(t, st, idA, release)
	start := time.Now()
	// A second append to the held agreement is left out too, never judged
	// before the first.
	second := reqs[0]
	second.IdempotencyKey = "k2"
	reqs = append(reqs, second)
	errs, alone, err := appendTogether(st, reqs, []store.Decide{nextComment("k"), nextComment("k"), nextComment("k2")})
	took := time.Since(start)
	close(release)
	if e := <-held; e != nil {
		t.Fatal(e)
	}
	if err != nil || errs[1] != nil || !alone[0] || alone[1] || !alone[2] {
		t.Fatalf("batch %v, errors %v, alone %v", err, errs, alone)
	}
	if took > 2*time.Second {
		t.Fatalf("the batch waited %v for the held lock", took)
	}
	for id, want := range map[uuid.UUID]int64{idA: 0, idB: 1} {
		if a, err := st.AgreementGet(ctx, id); err != nil || a.Head.Seq != want {
			t.Fatalf("agreement head %d, want %d (%v)", a.Head.Seq, want, err)
		}
	}
}

// Appends to one agreement in one AppendMany are judged in their order,
// each on the state the previous one wrote: seqs follow, the chain links,
// a refusal in between touches nobody else, and a key already used in the
// transaction is found as the prior event.
func TestAppendBatchJudgesAnAgreementsAppendsInOrder(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	id, pid := agreement(t, st)
	other, opid := agreement(t, st)
	hash, ohash := claim(t, st, pid), claim(t, st, opid)
	req := func(h []byte, ag uuid.UUID, key string) store.AppendRequest {
		return store.AppendRequest{TokenHash: h, AgreementID: ag, IdempotencyKey: key, SkipRoster: true}
	}
	refused := errors.New("refused")
	var replayPrior *store.Event
	reqs := []store.AppendRequest{req(hash, id, "a"), req(ohash, other, "x"), req(hash, id, "b"), req(hash, id, "c"), req(hash, id, "a"), req(hash, id, "d")}
	decides := []store.Decide{
		nextComment("a"), nextComment("x"), nextComment("b"),
		func(*store.AppendState) (store.AppendWrite, error) { return store.AppendWrite{}, refused },
		func(s *store.AppendState) (store.AppendWrite, error) {
			replayPrior = s.Prior
			return store.AppendWrite{}, nil
		},
		nextComment("d"),
	}
	errs, locked, err := appendTogether(st, reqs, decides)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if want := error(nil); i == 3 {
			if !errors.Is(e, refused) {
				t.Errorf("append %d: %v, want refused", i, e)
			}
		} else if e != want || locked[i] {
			t.Errorf("append %d: %v (locked %t)", i, e, locked[i])
		}
	}
	if replayPrior == nil || replayPrior.IdempotencyKey != "a" || replayPrior.Seq != 1 {
		t.Errorf("the replay of key a read prior %+v, want the event of seq 1 stored earlier in the transaction", replayPrior)
	}
	events, err := st.EventListByAgreement(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	prev := canon.ZeroHash
	for i, e := range events {
		if e.Seq != int64(i+1) || e.PrevHash != prev {
			t.Fatalf("event %d: seq %d prev %s, want %d after %s", i, e.Seq, e.PrevHash, i+1, prev)
		}
		prev = e.Hash
		got = append(got, e.IdempotencyKey)
	}
	if len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "d" {
		t.Errorf("stored keys %v, want [a b d] in that order", got)
	}
}

// Several appends of one agreement in one AppendMany count as many as they
// would one after the other: the participant's counter, the agreement's
// version and chain head, and a decision among them, after which the next
// append reads the decision.
func TestAppendBatchCountsEachAppendOfAnAgreement(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	id, pid := agreement(t, st)
	hash := claim(t, st, pid)
	before, err := st.AgreementGet(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	decision := func(key string) store.Decide {
		return func(s *store.AppendState) (store.AppendWrite, error) {
			w, err := nextComment(key)(s)
			if w.Event != nil {
				w.Event.Action = room.ActionAgree
			}
			return w, err
		}
	}
	var seen []*store.AppendState
	observe := func(d store.Decide) store.Decide {
		return func(s *store.AppendState) (store.AppendWrite, error) {
			cp := *s
			if s.Holder != nil {
				h := *s.Holder
				cp.Holder = &h
			}
			seen = append(seen, &cp)
			return d(s)
		}
	}
	keys := []string{"a", "b", "c", "d", "e"}
	decides := []store.Decide{observe(nextComment("a")), observe(nextComment("b")), observe(decision("c")), observe(nextComment("d")), observe(nextComment("e"))}
	reqs := make([]store.AppendRequest, len(keys))
	for i, k := range keys {
		reqs[i] = store.AppendRequest{TokenHash: hash, AgreementID: id, IdempotencyKey: k, SkipRoster: true}
	}
	errs, _, err := appendTogether(st, reqs, decides)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if e != nil {
			t.Fatalf("append %s: %v", keys[i], e)
		}
	}
	for i, s := range seen {
		if s.Holder.EventCount != i || s.Agreement.Head.Seq != int64(i) || s.Agreement.Version != before.Version+int64(i) {
			t.Errorf("append %s read count %d, head %d, version %d; want %d, %d, %d", keys[i], s.Holder.EventCount, s.Agreement.Head.Seq,
				s.Agreement.Version, i, i, before.Version+int64(i))
		}
		if decided := s.Holder.Decision != nil; decided != (i > 2) {
			t.Errorf("append %s read a decision: %t, want %t", keys[i], decided, i > 2)
		}
	}
	after, err := st.AgreementGet(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	events, err := st.EventListByAgreement(ctx, id)
	if err != nil || len(events) != 5 {
		t.Fatalf("%d events, %v; want 5", len(events), err)
	}
	if last := events[4]; after.Head.Seq != 5 || after.Head.Hash != last.Hash || after.Version != before.Version+5 {
		t.Errorf("agreement head %d %s version %d, want 5 %s version %d", after.Head.Seq, after.Head.Hash, after.Version, last.Hash, before.Version+5)
	}
	var holder *store.TokenHolder
	if _, err := st.Append(ctx, store.AppendRequest{TokenHash: hash, IdempotencyKey: "read", SkipRoster: true}, func(s *store.AppendState) (store.AppendWrite, error) {
		holder = s.Holder
		return store.AppendWrite{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if holder.EventCount != 5 || holder.Decision == nil || holder.Decision.EventID != events[2].ID {
		t.Errorf("participant counts %d events with decision %+v, want 5 and the decision of event c", holder.EventCount, holder.Decision)
	}
}
