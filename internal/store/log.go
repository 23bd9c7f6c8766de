package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// The transparency log's tables (migration 00024): its leaves, the tree's
// stored hashes, the checkpoints with their cosignatures, what the log
// holds of each room and the witnesses' state. Only the integrator writes
// them, one replica at a time (LogTryLock).

// LogRoom is a room whose revision, head or record the log does not hold
// yet, beside what the log holds of it.
type LogRoom struct {
	AgreementID uuid.UUID
	Revision    int
	HeadSeq     int64
	HeadHash    string
	HeadAt      time.Time // the head event's creation (meaningless at seq 0)
	Outcome     string
	RecordBody  []byte // the issued record, nil before
	Logged      LogRoomState
}

// LogRoomState is what the log holds of a room.
type LogRoomState struct {
	AgreementID uuid.UUID
	Revision    int
	Seq         int64
	HeadHash    string
	Record      bool
}

// LogRevision is a locked revision, for its leaf.
type LogRevision struct {
	AgreementID uuid.UUID
	Number      int
	Digest      string
	LockedAt    time.Time
}

// LogLeaf is one leaf at its index.
type LogLeaf struct {
	Index       int64
	AgreementID uuid.UUID
	Kind        string
	Body        []byte
}

// LogCheckpoint is a signed checkpoint and the cosignature lines stored
// for it.
type LogCheckpoint struct {
	Size         int64
	Root         tlog.Hash
	Signed       string
	CreatedAt    time.Time
	Cosignatures []string
}

// LogWitness is a witness's state: the size it last cosigned and its last
// failure, if any.
type LogWitness struct {
	Name       string
	Size       int64
	FailedSize *int64
	Failure    *string
	Refused    bool
	UpdatedAt  time.Time
}

// LogTryLock takes the integrator's lock for the transaction, reporting
// false when another replica holds it.
func (tx *Tx) LogTryLock(ctx context.Context) (bool, error) {
	ok, err := tx.q.LogTryLock(ctx)
	return ok, interpretError("log lock", err)
}

// LogSize is the number of leaves in the log.
func (q queries) LogSize(ctx context.Context) (int64, error) {
	n, err := q.q.LogSize(ctx)
	return n, interpretError("log size", err)
}

// LogRoomsChanged returns the rooms among ids, or every room when all,
// that have something the log does not hold yet.
func (q queries) LogRoomsChanged(ctx context.Context, ids []uuid.UUID, all bool) ([]LogRoom, error) {
	rows, err := q.q.LogRoomsChanged(ctx, dbsqlc.LogRoomsChangedParams{EveryRoom: all, Ids: nonNil(ids)})
	if err != nil {
		return nil, interpretError("log rooms", err)
	}
	return convert(rows, func(r dbsqlc.LogRoomsChangedRow) LogRoom {
		return LogRoom{AgreementID: r.ID, Revision: int(r.CurrentRevision), HeadSeq: r.HeadSeq, HeadHash: r.HeadHash,
			HeadAt: r.HeadAt, Outcome: r.OutcomeStatus, RecordBody: r.RecordBody,
			Logged: LogRoomState{AgreementID: r.ID, Revision: int(r.LoggedRevision), Seq: r.LoggedSeq, HeadHash: r.LoggedHead, Record: r.LoggedRecord}}
	}), nil
}

// LogRevisions returns the locked revisions of the agreements ids.
func (q queries) LogRevisions(ctx context.Context, ids []uuid.UUID) ([]LogRevision, error) {
	rows, err := q.q.LogRevisions(ctx, nonNil(ids))
	if err != nil {
		return nil, interpretError("log revisions", err)
	}
	return convert(rows, func(r dbsqlc.LogRevisionsRow) LogRevision {
		return LogRevision{AgreementID: r.AgreementID, Number: int(r.Number), Digest: r.RevisionDigest, LockedAt: r.LockedAt}
	}), nil
}

// LogFinalWithoutRecord lists up to max final agreements (among ids, or
// all) whose record was never issued.
func (q queries) LogFinalWithoutRecord(ctx context.Context, ids []uuid.UUID, all bool, max int) ([]uuid.UUID, error) {
	out, err := q.q.LogFinalWithoutRecord(ctx, dbsqlc.LogFinalWithoutRecordParams{EveryRoom: all, Ids: nonNil(ids), MaxRooms: int32(max)})
	return out, interpretError("log final rooms", err)
}

// LogAppend stores leaves, the stored hashes they add (hashes[i] at index
// first+i), and what the log now holds of their rooms.
func (tx *Tx) LogAppend(ctx context.Context, leaves []LogLeaf, first int64, hashes []tlog.Hash, rooms []LogRoomState) error {
	lp := dbsqlc.LogLeavesInsertParams{}
	for _, l := range leaves {
		lp.Idx = append(lp.Idx, l.Index)
		lp.AgreementID = append(lp.AgreementID, l.AgreementID)
		lp.Kind = append(lp.Kind, l.Kind)
		lp.Body = append(lp.Body, l.Body)
	}
	if err := tx.q.LogLeavesInsert(ctx, lp); err != nil {
		return interpretError("log leaves", err)
	}
	hp := dbsqlc.LogHashesInsertParams{Idx: make([]int64, len(hashes)), Hash: make([][]byte, len(hashes))}
	for i := range hashes {
		hp.Idx[i], hp.Hash[i] = first+int64(i), hashes[i][:]
	}
	if err := tx.q.LogHashesInsert(ctx, hp); err != nil {
		return interpretError("log hashes", err)
	}
	rp := dbsqlc.LogRoomsUpsertParams{}
	for _, r := range rooms {
		rp.AgreementID = append(rp.AgreementID, r.AgreementID)
		rp.Revision = append(rp.Revision, int32(r.Revision))
		rp.Seq = append(rp.Seq, r.Seq)
		rp.HeadHash = append(rp.HeadHash, r.HeadHash)
		rp.Record = append(rp.Record, r.Record)
	}
	return interpretError("log rooms", tx.q.LogRoomsUpsert(ctx, rp))
}

// LogHashes reads the stored hashes at indexes, in their order.
func (q queries) LogHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error) {
	rows, err := q.q.LogHashes(ctx, indexes)
	if err != nil {
		return nil, interpretError("log hashes", err)
	}
	byIndex := make(map[int64][]byte, len(rows))
	for _, r := range rows {
		byIndex[r.Idx] = r.Hash
	}
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		h, ok := byIndex[x]
		if !ok || len(h) != tlog.HashSize {
			return nil, interpretError("log hashes", errMissingHash(x))
		}
		copy(out[i][:], h)
	}
	return out, nil
}

type errMissingHash int64

func (e errMissingHash) Error() string {
	return fmt.Sprintf("log: no stored hash at index %d", int64(e))
}

// LogCheckpointInsert stores a signed checkpoint.
func (q queries) LogCheckpointInsert(ctx context.Context, c LogCheckpoint) error {
	return interpretError("log checkpoint", q.q.LogCheckpointInsert(ctx, dbsqlc.LogCheckpointInsertParams{
		Size: c.Size, Root: c.Root[:], Signed: c.Signed, CreatedAt: c.CreatedAt}))
}

// LogCheckpointLatest reads the newest checkpoint with its cosignatures,
// or room.ErrNotFound while the log is empty.
func (q queries) LogCheckpointLatest(ctx context.Context) (LogCheckpoint, error) {
	c, err := q.q.LogCheckpointLatest(ctx)
	if err != nil {
		return LogCheckpoint{}, interpretError("log checkpoint", err)
	}
	return q.withCosignatures(ctx, LogCheckpoint{Size: c.Size, Root: hash32(c.Root), Signed: c.Signed, CreatedAt: c.CreatedAt})
}

// LogCheckpointForProof reads the checkpoint a leaf at idx is best proven
// against: the most cosigned of those holding it, the newest of equals.
func (q queries) LogCheckpointForProof(ctx context.Context, idx int64) (LogCheckpoint, error) {
	c, err := q.q.LogCheckpointForProof(ctx, idx)
	if err != nil {
		return LogCheckpoint{}, interpretError("log checkpoint", err)
	}
	return q.withCosignatures(ctx, LogCheckpoint{Size: c.Size, Root: hash32(c.Root), Signed: c.Signed, CreatedAt: c.CreatedAt})
}

func (q queries) withCosignatures(ctx context.Context, c LogCheckpoint) (LogCheckpoint, error) {
	rows, err := q.q.LogCosignatures(ctx, c.Size)
	if err != nil {
		return LogCheckpoint{}, interpretError("log cosignatures", err)
	}
	for _, r := range rows {
		c.Cosignatures = append(c.Cosignatures, r.Line)
	}
	return c, nil
}

// LogCosignatureInsert stores a witness's cosignature line for the
// checkpoint of size.
func (q queries) LogCosignatureInsert(ctx context.Context, size int64, witness, line string, at time.Time) error {
	return interpretError("log cosignature", q.q.LogCosignatureInsert(ctx, dbsqlc.LogCosignatureInsertParams{
		Size: size, Witness: witness, Line: line, CreatedAt: at}))
}

// LogRecordLeaf reads the record leaf of an agreement, or room.ErrNotFound
// while the record is not in the log.
func (q queries) LogRecordLeaf(ctx context.Context, agreementID uuid.UUID) (LogLeaf, error) {
	r, err := q.q.LogRecordLeaf(ctx, agreementID)
	if err != nil {
		return LogLeaf{}, interpretError("log record leaf", err)
	}
	return LogLeaf{Index: r.Idx, AgreementID: agreementID, Kind: "record", Body: r.Body}, nil
}

// LogEntries reads the leaves at indexes first to last-1.
func (q queries) LogEntries(ctx context.Context, first, last int64) ([][]byte, error) {
	out, err := q.q.LogEntries(ctx, dbsqlc.LogEntriesParams{First: first, Last: last})
	return out, interpretError("log entries", err)
}

// LogWitnesses lists every witness's state.
func (q queries) LogWitnesses(ctx context.Context) ([]LogWitness, error) {
	rows, err := q.q.LogWitnessList(ctx)
	if err != nil {
		return nil, interpretError("log witnesses", err)
	}
	return convert(rows, func(r dbsqlc.LogWitness) LogWitness {
		return LogWitness{Name: r.Name, Size: r.Size, FailedSize: r.FailedSize, Failure: r.Failure, Refused: r.Refused, UpdatedAt: r.UpdatedAt}
	}), nil
}

// LogWitnessCosigned records that witness cosigned the checkpoint of size.
func (q queries) LogWitnessCosigned(ctx context.Context, name string, size int64, at time.Time) error {
	return interpretError("log witness", q.q.LogWitnessCosigned(ctx, dbsqlc.LogWitnessCosignedParams{Name: name, Size: size, UpdatedAt: at}))
}

// LogWitnessFailed records a witness's refusal (refused) or failure to
// cosign the checkpoint of size; known, when not nil, is the size the
// witness said it holds.
func (q queries) LogWitnessFailed(ctx context.Context, name string, size int64, known *int64, failure string, refused bool, at time.Time) error {
	return interpretError("log witness", q.q.LogWitnessFailed(ctx, dbsqlc.LogWitnessFailedParams{
		Name: name, Known: known, FailedSize: &size, Failure: &failure, Refused: refused, UpdatedAt: at}))
}

func hash32(b []byte) (h tlog.Hash) { copy(h[:], b); return h }

func nonNil(ids []uuid.UUID) []uuid.UUID {
	if ids == nil {
		return []uuid.UUID{}
	}
	return ids
}
