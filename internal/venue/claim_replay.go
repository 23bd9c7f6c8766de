package venue

import (
	"encoding/json"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// replayBinding answers a claim of a slot that p's first claim bound. The
// first binding names the revision current then; a later revision does not
// change it, so the claim is compared with fresh as if made on that
// revision, and an identical one replays the first binding, digest and
// therefore token. Anything else is room.ErrClaimConflict.
func replayBinding(p store.Participant, fresh room.Binding) (room.Binding, string, error) {
	var first room.Binding
	if err := json.Unmarshal([]byte(p.BindingJSON), &first); err != nil {
		return room.Binding{}, "", err
	}
	fresh.Revision, fresh.RevisionDigest = first.Revision, first.RevisionDigest
	_, digest, err := canon.DigestOf(fresh)
	if err != nil {
		return room.Binding{}, "", err
	}
	if digest != p.BindingDigest {
		return room.Binding{}, "", room.ErrClaimConflict
	}
	return fresh, digest, nil
}
