package venue

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/translog"
)

// The transparency log (SPEC §21): integration, which turns room
// milestones into leaves and signs a checkpoint, and the reads the log's
// routes serve. Appends do no log work: the integrator reads what changed
// from the rooms themselves (log_rooms holds what the log already has).

// ErrLogBusy: another replica is integrating.
var ErrLogBusy = errors.New("another replica is integrating the log")

// ErrLogEmpty: the log has no checkpoint yet.
var ErrLogEmpty = errors.New("the log has no checkpoint yet")

// ErrProofNotReady: the record is issued but not integrated yet.
var ErrProofNotReady = errors.New("the record is not in the log yet; integration runs about every second, try again shortly")

// ErrNoLog: this deployment runs no transparency log (no log key).
var ErrNoLog = errors.New("this deployment keeps no transparency log")

// LogIntegrationMax bounds the rooms one integration takes; the rest wait
// for the next, which the caller runs at once.
const LogIntegrationMax = 20000

// LogRecordsPerRound bounds the records one integration issues for final
// rooms that have none (a room just decided has its record issued at
// once; a backlog, such as the rooms finished before the log existed,
// is worked through a hundred a round without delaying the rest).
const LogRecordsPerRound = 100

// Integration is what one integration appended.
type Integration struct {
	Rooms      int
	Leaves     int
	Checkpoint store.LogCheckpoint // zero when nothing was appended
	More       bool                // rooms were left for the next integration
}

// IntegrateLog appends the milestones of the rooms ids (of every room when
// all) that the log does not hold yet, and signs a checkpoint of the new
// tree. Final rooms whose record was never issued get it issued first, so
// every final record enters the log. ErrLogBusy when another replica holds
// the integrator's lock.
func (v *Venue) IntegrateLog(ctx context.Context, ids []uuid.UUID, all bool) (Integration, error) {
	if v.LogSigner == nil {
		return Integration{}, ErrNoLog
	}
	var out Integration
	err := v.Store.InTx(ctx, func(tx *store.Tx) error {
		out = Integration{}
		ok, err := tx.LogTryLock(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return ErrLogBusy
		}
		// Under the lock, so one replica does it: the records are issued
		// and stored on connections of their own (idempotent), and this
		// transaction's next statement sees them (read committed).
		if err := v.issueMissingRecords(ctx, ids, all); err != nil {
			return err
		}
		rooms, err := tx.LogRoomsChanged(ctx, ids, all)
		if err != nil || len(rooms) == 0 {
			return err
		}
		if len(rooms) > LogIntegrationMax {
			rooms, out.More = rooms[:LogIntegrationMax], true
		}
		out.Rooms = len(rooms)
		return v.appendMilestones(ctx, tx, rooms, &out)
	})
	return out, err
}

// issueMissingRecords issues the records of the final rooms among ids,
// and, when all, of up to LogRecordsPerRound other final rooms without one.
func (v *Venue) issueMissingRecords(ctx context.Context, ids []uuid.UUID, all bool) error {
	var final []uuid.UUID
	if len(ids) > 0 {
		f, err := v.Store.LogFinalWithoutRecord(ctx, ids, false, len(ids))
		if err != nil {
			return err
		}
		final = f
	}
	if all {
		f, err := v.Store.LogFinalWithoutRecord(ctx, nil, true, LogRecordsPerRound)
		if err != nil {
			return err
		}
		final = append(final, f...)
	}
	for _, id := range final {
		if _, err := v.issueStoredRecord(ctx, id); err != nil && !errors.Is(err, ErrRecordNotReady) {
			return fmt.Errorf("log: issue the record of %s: %w", id, err)
		}
	}
	return nil
}

func (v *Venue) appendMilestones(ctx context.Context, tx *store.Tx, rooms []store.LogRoom, out *Integration) error {
	var revised []uuid.UUID
	for _, r := range rooms {
		if r.Revision > r.Logged.Revision {
			revised = append(revised, r.AgreementID)
		}
	}
	revs, err := tx.LogRevisions(ctx, revised)
	if err != nil {
		return err
	}
	byRoom := map[uuid.UUID][]store.LogRevision{}
	for _, r := range revs {
		byRoom[r.AgreementID] = append(byRoom[r.AgreementID], r)
	}
	size, err := tx.LogSize(ctx)
	if err != nil {
		return err
	}
	var leaves []store.LogLeaf
	states := make([]store.LogRoomState, 0, len(rooms))
	for _, r := range rooms {
		ls, state, err := roomMilestones(r, byRoom[r.AgreementID])
		if err != nil {
			return err
		}
		for _, l := range ls {
			b, err := l.Bytes()
			if err != nil {
				return err
			}
			leaves = append(leaves, store.LogLeaf{Index: size + int64(len(leaves)), AgreementID: r.AgreementID, Kind: l.Kind, Body: b})
		}
		states = append(states, state)
	}
	if len(leaves) == 0 {
		return tx.LogAppend(ctx, nil, 0, nil, states)
	}
	hr := newLogHashes(ctx, tx)
	if _, err := tlog.TreeHash(size, hr); err != nil { // reads the old tree's frontier in one statement
		return fmt.Errorf("log: the tree of %d leaves: %w", size, err)
	}
	first := tlog.StoredHashIndex(0, size)
	var added []tlog.Hash
	for i, l := range leaves {
		hs, err := tlog.StoredHashes(size+int64(i), l.Body, hr)
		if err != nil {
			return fmt.Errorf("log: hashes of leaf %d: %w", l.Index, err)
		}
		for j, h := range hs {
			hr.put(first+int64(len(added)+j), h)
		}
		added = append(added, hs...)
	}
	newSize := size + int64(len(leaves))
	root, err := tlog.TreeHash(newSize, hr)
	if err != nil {
		return fmt.Errorf("log: the tree of %d leaves: %w", newSize, err)
	}
	if err := tx.LogAppend(ctx, leaves, first, added, states); err != nil {
		return err
	}
	signed, err := v.LogSigner.SignCheckpoint(translog.Checkpoint{Origin: v.LogSigner.Name(), Size: newSize, Root: root})
	if err != nil {
		return err
	}
	out.Leaves = len(leaves)
	out.Checkpoint = store.LogCheckpoint{Size: newSize, Root: root, Signed: string(signed), CreatedAt: canon.Now(v.now())}
	return tx.LogCheckpointInsert(ctx, out.Checkpoint)
}

// roomMilestones returns the leaves a changed room adds, in order (its new
// revisions, its head, its record), and what the log then holds of it.
func roomMilestones(r store.LogRoom, revs []store.LogRevision) ([]translog.Leaf, store.LogRoomState, error) {
	id := r.AgreementID.String()
	state := r.Logged
	state.AgreementID = r.AgreementID
	var out []translog.Leaf
	for _, rev := range revs {
		if rev.Number <= r.Logged.Revision || rev.Number > r.Revision {
			continue
		}
		d := rev.Digest
		out = append(out, translog.Leaf{Type: translog.LeafType, AgreementID: id, Kind: translog.KindRevision,
			Revision: rev.Number, Digest: &d, At: canon.FormatTime(rev.LockedAt)})
		state.Revision = rev.Number
	}
	if r.HeadSeq > 0 && (r.HeadSeq != r.Logged.Seq || r.HeadHash != r.Logged.HeadHash) {
		seq, head := r.HeadSeq, r.HeadHash
		out = append(out, translog.Leaf{Type: translog.LeafType, AgreementID: id, Kind: translog.KindHead,
			Revision: r.Revision, Seq: &seq, ChainHead: &head, At: canon.FormatTime(r.HeadAt)})
	}
	state.Seq, state.HeadHash = r.HeadSeq, r.HeadHash
	if r.RecordBody != nil && !r.Logged.Record {
		l, err := translog.RecordLeaf(r.RecordBody)
		if err != nil {
			return nil, state, fmt.Errorf("log: the record of %s: %w", id, err)
		}
		out = append(out, l)
		state.Record = true
	}
	return out, state, nil
}

// logHashes reads stored hashes for x/mod's tlog: those added by the
// integration under way from memory, the rest from the database, each
// read at most once.
type logHashes struct {
	ctx   context.Context
	q     hashStore
	known map[int64]tlog.Hash
}

// hashStore reads stored hashes: the store, or the transaction of an
// integration under way.
type hashStore interface {
	LogHashes(context.Context, []int64) ([]tlog.Hash, error)
}

func newLogHashes(ctx context.Context, q hashStore) *logHashes {
	return &logHashes{ctx: ctx, q: q, known: map[int64]tlog.Hash{}}
}

func (r *logHashes) put(i int64, h tlog.Hash) { r.known[i] = h }

// ReadHashes implements tlog.HashReader.
func (r *logHashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	var missing []int64
	for _, x := range indexes {
		if _, ok := r.known[x]; !ok {
			missing = append(missing, x)
		}
	}
	if len(missing) > 0 {
		hs, err := r.q.LogHashes(r.ctx, missing)
		if err != nil {
			return nil, err
		}
		for i, x := range missing {
			r.known[x] = hs[i]
		}
	}
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		out[i] = r.known[x]
	}
	return out, nil
}
