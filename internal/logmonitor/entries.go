package logmonitor

import (
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/translog"
)

// bundlesPerBatch is how many entry bundles are fetched together before
// they are checked in order.
const bundlesPerBatch = 4 * fetchWorkers

// entries reads the entries of leaves from to to-1 from the served entry
// bundles: each must hash to the leaf hash the monitor verified and be a
// canonical consensus-log-leaf/v1, and an agreement's heads must only move
// forward. Each head and record leaf becomes its agreement's latest head.
// It reports false after a failed check, naming the leaf.
func (r *run) entries(from, to int64) (bool, error) {
	if from == to {
		return true, nil
	}
	const width = 1 << translog.TileHeight
	first, last := from/width, (to-1)/width
	for lo := first; lo <= last; lo += bundlesPerBatch {
		hi := min(last+1, lo+bundlesPerBatch)
		bundles := make([][][]byte, hi-lo)
		err := r.f.each(int(hi-lo), func(i int) error {
			k := lo + int64(i)
			t := tlog.Tile{H: translog.TileHeight, L: translog.EntriesLevel, N: k, W: int(min(width, to-k*width))}
			var err error
			bundles[i], err = r.f.bundle(t)
			return err
		})
		if IsUnavailable(err) {
			return false, err
		}
		if err != nil {
			r.rep.add("entries", Fail, "%v", err)
			return false, nil
		}
		for i, b := range bundles {
			for j, e := range b {
				index := (lo+int64(i))*width + int64(j)
				if index < from {
					continue
				}
				if err := r.entry(index, e); err != nil {
					r.rep.add("entries", Fail, "leaf %d: %v", index, err)
					return false, nil
				}
			}
		}
	}
	r.rep.add("entries", OK, "leaves %d to %d: each entry hashes to its leaf and is a canonical %s", from, to-1, translog.LeafType)
	return true, nil
}

// entry checks the entry of leaf index and keeps its head.
func (r *run) entry(index int64, e []byte) error {
	if tlog.RecordHash(e) != r.t.leaves[index] {
		return fmt.Errorf("the served entry does not hash to the leaf hash in the tiles")
	}
	l, err := translog.ParseLeaf(e)
	if err != nil {
		return err
	}
	if l.Kind != translog.KindHead && l.Kind != translog.KindRecord {
		return nil
	}
	h := Head{Index: index, Kind: l.Kind, Seq: *l.Seq, ChainHead: *l.ChainHead, At: l.At}
	if prev, ok := r.st.Heads[l.AgreementID]; ok && (h.Seq < prev.Seq || h.Seq == prev.Seq && h.ChainHead != prev.ChainHead) {
		return fmt.Errorf("agreement %s's %s (seq %d, chainHead %s) does not extend its head at leaf %d (seq %d, chainHead %s): the room's history was rewritten",
			l.AgreementID, l.Kind, h.Seq, h.ChainHead, prev.Index, prev.Seq, prev.ChainHead)
	}
	r.st.Heads[l.AgreementID] = h
	return nil
}
