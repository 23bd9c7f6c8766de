package stress

// The invariants a consistent store holds, checked on the stored state.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
)

// violations checks every invariant a consistent store holds, whatever
// the load, the crashes and the outages were:
//   - at most one terminal decision per participant and revision, at most
//     100 events, no (participant, Idempotency-Key) stored twice;
//   - every agreement's hash chain verifies: seq 1..n, prev links, each
//     hash recomputed from (prev, seq, command_digest, created_at) and each
//     command digest recomputed from the room-command/v1 object;
//   - every stored outcome equals room.Evaluate over the stored events, a
//     final outcome names its deciding event, reached has its artifact
//     (whose bytes match its digest and name that event) and nothing else
//     has one;
//   - every participant's state agrees with its binding and its events;
//   - no terminal decision of a revoked participant was written after the
//     revoke: the transaction that stored it is not the last writer of a
//     participant row that already holds revoked_at (it set the state to
//     decided, so it saw the revoke committed);
//   - a sent email's sealed body is erased.
func (s *dbState) violations(origin string) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if s.DupKeys > 0 {
		bad("%d (participant, Idempotency-Key) pairs are stored more than once", s.DupKeys)
	}
	byAgreement := map[string][]dbEvent{}
	for _, e := range s.Events {
		byAgreement[e.AgreementID] = append(byAgreement[e.AgreementID], e)
	}
	terminal := map[string]int{}
	count := map[string]int{}
	for _, e := range s.Events {
		k := fmt.Sprintf("%s|%d", e.ParticipantID, e.Revision)
		count[k]++
		if room.IsTerminal(e.Action) {
			terminal[k]++
		}
	}
	for k, n := range terminal {
		if n > 1 {
			bad("participant|revision %s has %d terminal decisions", k, n)
		}
	}
	for k, n := range count {
		if n > room.MaxEventsPerParticipant {
			bad("participant|revision %s has %d events", k, n)
		}
	}
	for id, a := range s.Agreements {
		evs := byAgreement[id]
		prev := canon.ZeroHash
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				bad("agreement %s: event %d has seq %d", id, i+1, e.Seq)
			}
			if e.Prev != prev {
				bad("agreement %s: seq %d prev %s, want %s", id, e.Seq, e.Prev, prev)
			}
			_, h, err := canon.DigestOf(map[string]any{"prev": e.Prev, "seq": e.Seq, "command_digest": e.CommandDigest, "created_at": canon.FormatTime(e.CreatedAt)})
			if err != nil || h != e.Hash {
				bad("agreement %s: seq %d hash %s does not recompute (%s, %v)", id, e.Seq, e.Hash, h, err)
			}
			prev = e.Hash
			p := s.Participants[e.ParticipantID]
			if p == nil || p.AgreementID != id {
				bad("event %s by %s, not a participant of agreement %s", e.ID, e.ParticipantID, id)
				continue
			}
			if p.BindingDigest == nil {
				bad("event %s by participant %s, which never claimed", e.ID, p.ID)
			}
			cmd := room.Command{Schema: fmt.Sprintf(room.RoomCommandSchemaFmt, origin), Version: 1, AgreementID: id,
				InvitationID: p.InvitationID, ParticipantID: p.ID, Revision: e.Revision, RevisionDigest: a.RevisionDigest,
				Action: e.Action, Body: e.Body}
			if _, d, err := canon.DigestOf(cmd); err != nil || d != e.CommandDigest {
				bad("event %s: command digest %s does not recompute (%s, %v)", e.ID, e.CommandDigest, d, err)
			}
		}
		var roster []room.Member
		for _, p := range s.Participants {
			if p.AgreementID == id {
				roster = append(roster, room.Member{ID: p.ID, Required: p.Required})
			}
		}
		devs := make([]room.Event, len(evs))
		for i, e := range evs {
			devs[i] = room.Event{ID: e.ID, Seq: e.Seq, ParticipantID: e.ParticipantID, Revision: e.Revision, Action: e.Action, CreatedAt: e.CreatedAt}
		}
		want := room.Evaluate(a.Revision, roster, devs, a.Deadline, time.Now())
		got := room.Outcome{Status: a.Status}
		if a.DecidedAt != nil {
			got.DecidedAt = *a.DecidedAt
		}
		if a.EventID != nil {
			got.DecidingEventID = *a.EventID
		}
		if got.Status != want.Status || got.DecidingEventID != want.DecidingEventID || !got.DecidedAt.Equal(want.DecidedAt) {
			bad("agreement %s: stored outcome %s/%s/%s, the stored events give %s/%s/%s", id,
				got.Status, got.DecidingEventID, canon.FormatTime(got.DecidedAt), want.Status, want.DecidingEventID, canon.FormatTime(want.DecidedAt))
		}
		if a.Status != room.StatusPending && a.Status != room.StatusExpired {
			if a.EventID == nil || s.EventByID[*a.EventID] == nil || s.EventByID[*a.EventID].AgreementID != id {
				bad("agreement %s: outcome %s without its deciding event", id, a.Status)
			}
		}
		art := s.Artifacts[id]
		switch {
		case a.Status == room.StatusReached && art == nil:
			bad("agreement %s: reached without an artifact", id)
		case a.Status != room.StatusReached && art != nil:
			bad("agreement %s: an artifact for outcome %s", id, a.Status)
		case art != nil:
			sum := sha256.Sum256(art.Body)
			if hex.EncodeToString(sum[:]) != art.SHA256 {
				bad("agreement %s: artifact bytes do not match its sha256", id)
			}
			if a.EventID != nil && !strings.Contains(string(art.Body), *a.EventID) {
				bad("agreement %s: artifact does not name the deciding event %s", id, *a.EventID)
			}
			if a.EventID != nil && s.EventByID[*a.EventID] != nil && !strings.Contains(string(art.Body), s.EventByID[*a.EventID].Hash) {
				bad("agreement %s: artifact does not state the chain head at the deciding event", id)
			}
		}
	}
	for _, p := range s.Participants {
		hasTerminal := terminal[fmt.Sprintf("%s|%d", p.ID, s.currentRevision(p.AgreementID))] > 0
		bound := p.BindingJSON != nil && p.BindingDigest != nil && p.TokenHash != nil
		unbound := p.BindingJSON == nil && p.BindingDigest == nil && p.TokenHash == nil
		switch {
		case !bound && !unbound:
			bad("participant %s: half a binding (json %v, digest %v, token %v)", p.ID, p.BindingJSON != nil, p.BindingDigest != nil, p.TokenHash != nil)
		case p.State == "invited" && !unbound:
			bad("participant %s: invited but bound", p.ID)
		case p.State != "invited" && !bound:
			bad("participant %s: %s without a binding", p.ID, p.State)
		case (p.State == "decided") != hasTerminal:
			bad("participant %s: state %s, terminal decision stored: %v", p.ID, p.State, hasTerminal)
		}
		if bound && canon.Digest([]byte(*p.BindingJSON)) != *p.BindingDigest {
			bad("participant %s: binding digest does not match its binding", p.ID)
		}
		if p.RevokedAt != nil {
			for _, e := range s.Events {
				if e.ParticipantID == p.ID && room.IsTerminal(e.Action) && e.Xmin == p.Xmin {
					bad("participant %s: its %s (event %s) was stored by a transaction that saw its revoke", p.ID, e.Action, e.ID)
				}
			}
		}
	}
	if s.SentSealed > 0 {
		bad("%d sent emails keep their sealed body", s.SentSealed)
	}
	sort.Strings(out)
	return out
}

func (s *dbState) currentRevision(agreementID string) int {
	if a := s.Agreements[agreementID]; a != nil {
		return a.Revision
	}
	return 1
}

// checkInvariants fails the test with every violation found.
func checkInvariants(t testing.TB, v *venue) *dbState {
	t.Helper()
	s := loadState(t, v.db)
	if vs := s.violations(v.origin); len(vs) > 0 {
		if len(vs) > 40 {
			vs = append(vs[:40], fmt.Sprintf("… and %d more", len(vs)-40))
		}
		t.Errorf("the stored records are inconsistent:\n  %s", strings.Join(vs, "\n  "))
	}
	return s
}
