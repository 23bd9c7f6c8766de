package venue

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/translog"
)

// ErrTileNotFound: a tile or entry bundle beyond the log's current tree.
var ErrTileNotFound = errors.New("no such tile in the log's current tree")

// LogKey is the log's public identity: its origin (the checkpoint's first
// line and the key's name) and its signed-note verifier key. ok is false
// when the deployment keeps no log.
func (v *Venue) LogKey() (origin, verifierKey string, ok bool) {
	if v.LogSigner == nil {
		return "", "", false
	}
	return v.LogSigner.Name(), v.LogSigner.VerifierKey(), true
}

// LogCheckpoint returns the newest checkpoint, signed by the log, with
// every cosignature the witnesses returned for it.
func (v *Venue) LogCheckpoint(ctx context.Context) ([]byte, error) {
	if v.LogSigner == nil {
		return nil, ErrNoLog
	}
	c, err := v.Store.LogCheckpointLatest(ctx)
	if errors.Is(err, room.ErrNotFound) {
		return nil, ErrLogEmpty
	}
	if err != nil {
		return nil, err
	}
	return translog.AddSignatureLines([]byte(c.Signed), c.Cosignatures...), nil
}

// LogTile returns the bytes of a C2SP tlog-tiles tile (or entry bundle,
// at translog.EntriesLevel) of the log's current tree, and whether it is
// full (a full tile never changes). ErrTileNotFound beyond the tree.
func (v *Venue) LogTile(ctx context.Context, t tlog.Tile) (data []byte, full bool, err error) {
	if v.LogSigner == nil {
		return nil, false, ErrNoLog
	}
	c, err := v.Store.LogCheckpointLatest(ctx)
	if errors.Is(err, room.ErrNotFound) {
		return nil, false, ErrTileNotFound
	}
	if err != nil {
		return nil, false, err
	}
	full = t.W == 1<<translog.TileHeight
	level := max(t.L, 0)
	width := c.Size >> (uint(level) * translog.TileHeight) // hashes at that tile level
	if t.N<<translog.TileHeight+int64(t.W) > width {
		return nil, false, ErrTileNotFound
	}
	if t.L == translog.EntriesLevel {
		first := t.N << translog.TileHeight
		entries, err := v.Store.LogEntries(ctx, first, first+int64(t.W))
		if err != nil {
			return nil, false, err
		}
		if len(entries) != t.W {
			return nil, false, fmt.Errorf("log: %d entries stored of %d in bundle %d", len(entries), t.W, t.N)
		}
		data, err = translog.EntryBundle(entries)
		return data, full, err
	}
	data, err = tlog.ReadTileData(t, newLogHashes(ctx, v.Store))
	return data, full, err
}

// RecordProof returns the consensus-log-proof/v1 bundle of the agreement's
// record: its leaf, index, inclusion proof and the checkpoint (with its
// cosignatures) it is proven against. ErrRecordNotReady before the outcome
// is final, ErrProofNotReady until the record is integrated.
func (v *Venue) RecordProof(ctx context.Context, p *Principal) (translog.Proof, error) {
	if v.LogSigner == nil {
		return translog.Proof{}, ErrNoLog
	}
	if _, err := v.Record(ctx, p); err != nil {
		return translog.Proof{}, err
	}
	return v.recordProof(ctx, p.AgreementID)
}

func (v *Venue) recordProof(ctx context.Context, agreementID uuid.UUID) (translog.Proof, error) {
	leaf, err := v.Store.LogRecordLeaf(ctx, agreementID)
	if errors.Is(err, room.ErrNotFound) {
		return translog.Proof{}, ErrProofNotReady
	}
	if err != nil {
		return translog.Proof{}, err
	}
	c, err := v.Store.LogCheckpointForProof(ctx, leaf.Index)
	if errors.Is(err, room.ErrNotFound) {
		return translog.Proof{}, ErrProofNotReady
	}
	if err != nil {
		return translog.Proof{}, err
	}
	proof, err := tlog.ProveRecord(c.Size, leaf.Index, newLogHashes(ctx, v.Store))
	if err != nil {
		return translog.Proof{}, fmt.Errorf("log: prove leaf %d in %d: %w", leaf.Index, c.Size, err)
	}
	signed := translog.AddSignatureLines([]byte(c.Signed), c.Cosignatures...)
	return translog.NewProof(leaf.Body, leaf.Index, proof, signed, v.LogSigner.VerifierKey()), nil
}

// LogConsistency proves that the tree of size old is a prefix of the tree
// of size size (the hashes a witness's add-checkpoint wants).
func (v *Venue) LogConsistency(ctx context.Context, size, old int64) (tlog.TreeProof, error) {
	return tlog.ProveTree(size, old, newLogHashes(ctx, v.Store))
}

// OperatorRecordProof is RecordProof for an operator of the agreement's
// workspace (the generic not-found for any other agreement).
func (v *Venue) OperatorRecordProof(ctx context.Context, c OperatorCall, agreementID string) (translog.Proof, error) {
	if v.LogSigner == nil {
		return translog.Proof{}, ErrNoLog
	}
	rec, err := v.ConsoleRecord(ctx, c, agreementID)
	if err != nil {
		return translog.Proof{}, err
	}
	return v.recordProof(ctx, rec.AgreementID)
}
