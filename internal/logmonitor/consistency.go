package logmonitor

import (
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/translog"
)

// advance compares the log's checkpoint cp with the one accepted before
// (old) and, when the log grew, reads the new leaf hashes into the
// monitor's tree. It reports false after a failed check.
func (r *run) advance(old, cp translog.Checkpoint) (bool, error) {
	m, n := old.Size, cp.Size
	switch {
	case n < m:
		detail := fmt.Sprintf("rollback: the log serves %d leaves, fewer than the %d this monitor accepted (root %s)", n, m, b64(old.Root))
		if root, err := r.t.root(n); err == nil && root != cp.Root {
			detail += fmt.Sprintf(", and its root is not that of the first %d leaves the monitor verified", n)
		}
		r.rep.add("consistency", Fail, "%s%s", detail, r.firstBad(n, n))
		return false, nil
	case n == m && cp.Root == old.Root:
		r.rep.add("consistency", OK, "unchanged at %d leaves", n)
		return true, nil
	case n == m:
		r.rep.add("consistency", Fail, "the log's root for its %d leaves is %s, not the %s this monitor accepted: the log was rewritten, or shows different views to different readers%s",
			n, b64(cp.Root), b64(old.Root), r.firstBad(n, m))
		return false, nil
	}
	thr := tlog.TileHashReader(tlog.Tree{N: n, Hash: cp.Root}, r.f)
	if m > 0 {
		proof, err := tlog.ProveTree(n, m, thr)
		if err == nil {
			err = tlog.CheckTree(proof, n, cp.Root, m, old.Root)
		}
		if IsUnavailable(err) {
			return false, err
		}
		if err != nil {
			r.rep.add("consistency", Fail, "no consistency proof from the served tiles leads from the %d leaves accepted before (root %s) to the %d of the checkpoint (root %s): %v%s",
				m, b64(old.Root), n, b64(cp.Root), err, r.firstBad(n, m))
			return false, nil
		}
	}
	for lo := m; lo < n; lo += hashesPerRead {
		hi := min(n, lo+hashesPerRead)
		indexes := make([]int64, 0, hi-lo)
		for i := lo; i < hi; i++ {
			indexes = append(indexes, tlog.StoredHashIndex(0, i))
		}
		hashes, err := thr.ReadHashes(indexes)
		if IsUnavailable(err) {
			return false, err
		}
		if err != nil {
			r.rep.add("consistency", Fail, "the served tiles of leaves %d to %d do not make the checkpoint's root: %v", lo, hi-1, err)
			return false, nil
		}
		for _, h := range hashes {
			if err := r.t.add(h); err != nil {
				return false, err
			}
		}
	}
	root, err := r.t.root(n)
	if err != nil {
		return false, err
	}
	if root != cp.Root {
		r.rep.add("consistency", Fail, "the root of the %d leaf hashes this monitor holds (%d kept, %d new) is %s, the checkpoint says %s%s",
			n, m, n-m, b64(root), b64(cp.Root), r.firstBad(n, m))
		return false, nil
	}
	if m == 0 {
		r.rep.add("consistency", OK, "0 → %d leaves: the root of the served leaf hashes is the checkpoint's (nothing accepted before to compare with)", n)
	} else {
		r.rep.add("consistency", OK, "%d → %d leaves: the consistency proof from the served tiles holds, and the root of the kept and new leaf hashes is the checkpoint's", m, n)
	}
	return true, nil
}

// firstBad names the first leaf index below upTo whose hash in the level-0
// tiles the log serves for a tree of served leaves differs from the hash
// the monitor verified before, as a suffix for a failure's detail.
func (r *run) firstBad(served, upTo int64) string {
	upTo = min(upTo, served, r.t.size())
	const width = 1 << translog.TileHeight
	for k := int64(0); k*width < upTo; k++ {
		t := tlog.Tile{H: translog.TileHeight, L: 0, N: k, W: int(min(width, served-k*width))}
		b, err := r.f.tile(t)
		if err != nil {
			return fmt.Sprintf("; the first bad index could not be found: %v", err)
		}
		for j := int64(0); j < int64(t.W) && k*width+j < upTo; j++ {
			i := k*width + j
			var h tlog.Hash
			copy(h[:], b[j*tlog.HashSize:])
			if h != r.t.leaves[i] {
				return fmt.Sprintf("; first bad index %d: the log now serves leaf hash %s there, this monitor verified %s", i, b64(h), b64(r.t.leaves[i]))
			}
		}
	}
	return fmt.Sprintf("; the served leaf hashes of the first %d leaves are the ones this monitor verified (the tiles above them or the checkpoint disagree)", upTo)
}
