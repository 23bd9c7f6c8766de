package logmonitor

import (
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// tree is the monitor's own copy of the log: the leaf hashes it verified
// and every stored hash of the tree they make (tlog's layout), in memory
// for the run. It is a tlog.HashReader.
type tree struct {
	leaves []tlog.Hash
	stored []tlog.Hash
}

func newTree(leaves []tlog.Hash) (*tree, error) {
	t := &tree{}
	for _, h := range leaves {
		if err := t.add(h); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *tree) size() int64 { return int64(len(t.leaves)) }

// add appends a leaf hash and the stored hashes it completes.
func (t *tree) add(h tlog.Hash) error {
	hs, err := tlog.StoredHashesForRecordHash(t.size(), h, t)
	if err != nil {
		return err
	}
	t.stored = append(t.stored, hs...)
	t.leaves = append(t.leaves, h)
	return nil
}

// root is the root hash of the tree of the first n leaves (n ≤ size).
func (t *tree) root(n int64) (tlog.Hash, error) { return tlog.TreeHash(n, t) }

// ReadHashes implements tlog.HashReader.
func (t *tree) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(t.stored)) {
			return nil, fmt.Errorf("stored hash %d is beyond the monitor's tree", x)
		}
		out[i] = t.stored[x]
	}
	return out, nil
}
