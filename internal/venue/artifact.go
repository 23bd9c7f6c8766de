package venue

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// Artifact is CONSENSUS.md with what its headers state.
type Artifact struct {
	Body        []byte
	SHA256      string
	AgreementID string
	Revision    int
	FinalizedAt string
}

// Artifact returns the stored CONSENSUS.md, or ErrArtifactNotReady unless
// the outcome is reached. The outcome comes from the credential check, which
// read it with the agreement's version; an artifact is stored in the
// transaction that reaches the outcome and never changes, so once read it
// is served from memory.
func (v *Venue) Artifact(ctx context.Context, p *Principal) (*Artifact, error) {
	if p.OutcomeStatus != room.StatusReached {
		return nil, ErrArtifactNotReady
	}
	if a := v.rooms().artifact(p.AgreementID); a != nil {
		return a, nil
	}
	art, err := v.Store.ArtifactGet(ctx, p.AgreementID)
	if err != nil {
		if errors.Is(err, room.ErrNotFound) {
			return nil, ErrArtifactNotReady
		}
		return nil, err
	}
	a := &Artifact{Body: art.Body, SHA256: art.SHA256, AgreementID: art.AgreementID.String(), Revision: art.Revision, FinalizedAt: canon.FormatTime(art.FinalizedAt)}
	v.rooms().keepArtifact(p.AgreementID, a)
	return a, nil
}

// renderArtifact writes CONSENSUS.md for a reached outcome: the locked
// revision, each participant's decision and the chain up to last, the event
// that completed the rule.
func renderArtifact(rev store.Revision, snap room.Snapshot, last store.Event, outcome room.Outcome, now time.Time) ([]byte, error) {
	var revision room.Revision
	if err := json.Unmarshal(rev.Canonical, &revision); err != nil {
		return nil, err
	}
	decisions := room.Decisions(snap.Revision, snap.Events)
	entries := make([]room.ArtifactEntry, len(revision.Participants))
	for i, rp := range revision.Participants {
		entries[i] = room.ArtifactEntry{Participant: rp}
		if d, ok := decisions[rp.ParticipantID]; ok {
			entries[i].Decision, entries[i].EventID, entries[i].DecidedAt = d.Action, d.ID, canon.FormatTime(d.CreatedAt)
		}
	}
	md := room.RenderArtifact(room.ArtifactInput{
		Locked: room.Locked{Revision: revision, Canonical: rev.Canonical, Markdown: rev.Markdown, RevisionDigest: rev.RevisionDigest, MarkdownDigest: rev.MarkdownDigest},
		Roster: entries, ChainHead: last.Hash, ChainLength: last.Seq, FinalizedAt: canon.FormatTime(now), DecidingID: outcome.DecidingEventID,
	})
	return []byte(md), nil
}
