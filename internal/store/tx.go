package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// Append runs one append as Store.Append does, in tx: it locks and reads
// the agreement of req (tx may hold the lock already), judges the state
// with decide and sends what decide wrote, which commits with tx. A
// caller that writes more of the same change does it in tx around the
// append: a reply's claim of its slot, and its row and answer, commit with
// its event or not at all. A serialization failure or deadlock is
// returned, for InTx to run the whole transaction again.
func (t *Tx) Append(ctx context.Context, req AppendRequest, decide Decide) (any, error) {
	it := &AppendItem{Request: req, Decide: decide}
	done, last, hooks, err := judgeItems(ctx, t.tx, pipeline{}, []*AppendItem{it}, false)
	if err != nil {
		return nil, err
	}
	if last != nil {
		if err := last.send(ctx, t.tx); err != nil {
			return nil, err
		}
		for _, j := range hooks {
			if err := j.queue(ctx, t.tx); err != nil {
				return nil, err
			}
		}
		announce(t.queries, done)
	}
	return it.Result, it.Err
}

// Savepoint runs fn in a savepoint of t: when fn returns an error,
// everything fn wrote is undone (and not announced after the commit) and
// the error comes back, while t goes on; otherwise what fn wrote commits
// with t.
func (t *Tx) Savepoint(ctx context.Context, fn func(tx *Tx) error) error {
	sp, err := t.tx.Begin(ctx)
	if err != nil {
		return interpretError("savepoint", err)
	}
	var notes []note
	var changed []uuid.UUID
	inner := &Tx{queries: queries{q: dbsqlc.New(sp), changed: func(id uuid.UUID) { changed = append(changed, id) }}, tx: sp}
	if t.emit != nil {
		inner.emit = func(n note) { notes = append(notes, n) }
	}
	if err := fn(inner); err != nil {
		if rerr := sp.Rollback(ctx); rerr != nil {
			return interpretError("rollback to savepoint", rerr)
		}
		return err
	}
	if err := sp.Commit(ctx); err != nil {
		return interpretError("release savepoint", err)
	}
	for _, n := range notes {
		t.emit(n)
	}
	for _, id := range changed {
		t.roomChanged(id)
	}
	return nil
}
