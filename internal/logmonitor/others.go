package logmonitor

import (
	"golang.org/x/mod/sumdb/tlog"

	"github.com/consensus-md/consensus/internal/translog"
)

// others checks the checkpoints seen elsewhere against the monitor's view,
// the log's checkpoint cp whose leaf hashes the monitor now holds: one of
// the same size must have the same root (else two views of one log,
// both signed), a smaller one must be the root of that many of the
// monitor's leaves, and a larger one must extend cp by a consistency proof
// from the served tiles.
func (r *run) others(cp translog.Checkpoint) error {
	for _, s := range r.cfg.Seen {
		name := "checkpoint " + s.Name
		c, err := openCheckpoint(s.Signed, r.key)
		if err != nil {
			r.rep.add(name, Fail, "%v", err)
			continue
		}
		switch {
		case c.Size == cp.Size && c.Root == cp.Root:
			r.rep.add(name, OK, "the log's own tree of %d leaves", c.Size)
		case c.Size == cp.Size:
			r.rep.add(name, Fail, "split view: the log signed two trees of %d leaves, root %s (%s) and root %s (served to this monitor)",
				c.Size, b64(c.Root), s.Name, b64(cp.Root))
		case c.Size < cp.Size:
			root, err := r.t.root(c.Size)
			if err != nil {
				return err
			}
			if root != c.Root {
				r.rep.add(name, Fail, "split view: its root for %d leaves is %s, the first %d leaves this monitor verified make %s",
					c.Size, b64(c.Root), c.Size, b64(root))
				continue
			}
			r.rep.add(name, OK, "%d leaves, a prefix of this monitor's %d", c.Size, cp.Size)
		default:
			thr := tlog.TileHashReader(tlog.Tree{N: c.Size, Hash: c.Root}, r.f)
			proof, err := tlog.ProveTree(c.Size, cp.Size, thr)
			if err == nil {
				err = tlog.CheckTree(proof, c.Size, c.Root, cp.Size, cp.Root)
			}
			switch {
			case IsUnavailable(err):
				r.rep.add(name, Unchecked, "%d leaves, more than the log serves to this monitor (%d), and its tiles cannot be read: %v", c.Size, cp.Size, err)
			case err != nil:
				r.rep.add(name, Fail, "split view: no consistency proof from the served tiles leads from this monitor's %d leaves (root %s) to its %d (root %s): %v",
					cp.Size, b64(cp.Root), c.Size, b64(c.Root), err)
			default:
				r.rep.add(name, OK, "%d leaves, extending this monitor's %d (consistency proof from the served tiles)", c.Size, cp.Size)
			}
		}
	}
	return nil
}
