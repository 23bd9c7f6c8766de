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
// revision, and an identical one replays the first binding (with its
// canonical bytes, which a keyed claim's proof must sign), digest and
// therefore token. A keyed claim is compared in its participant-binding/v2
// form, so the same key must come again. Anything else is
// room.ErrClaimConflict.
func (v *Venue) replayBinding(p store.Participant, fresh room.Binding, key *claimantKey) (any, []byte, string, error) {
	var first room.Binding
	if err := json.Unmarshal([]byte(p.BindingJSON), &first); err != nil {
		return nil, nil, "", err
	}
	fresh.Revision, fresh.RevisionDigest = first.Revision, first.RevisionDigest
	b := v.bindingFor(fresh, key)
	canonical, digest, err := canon.DigestOf(b)
	if err != nil {
		return nil, nil, "", err
	}
	if digest != p.BindingDigest {
		return nil, nil, "", room.ErrClaimConflict
	}
	return b, canonical, digest, nil
}
