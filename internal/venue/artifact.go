package venue

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/record"
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

// renderArtifact writes CONSENSUS.md for a reached outcome: every revision
// (when there are several), the locked revision, each participant's
// decision that counts with the revision it was made on (and its evidence,
// when recorded from a reply email, or the thumbprint of the key that
// signed it, from keys by participant id), and the chain up to last, the
// event that completed the rule. rev carries its History.
func renderArtifact(rev store.Revision, snap room.Snapshot, last store.Event, outcome room.Outcome, now time.Time, keys map[string]string) ([]byte, error) {
	var revision room.Revision
	if err := json.Unmarshal(rev.Canonical, &revision); err != nil {
		return nil, err
	}
	standings := snap.History().Standings()
	entries := make([]room.ArtifactEntry, len(revision.Participants))
	for i, rp := range revision.Participants {
		entries[i] = room.ArtifactEntry{Participant: rp}
		if s, ok := standings[rp.ParticipantID]; ok && !s.Stale {
			d := s.Event
			entries[i].Decision, entries[i].EventID, entries[i].DecidedAt, entries[i].Revision = d.Action, d.ID, canon.FormatTime(d.CreatedAt), d.Revision
			reply, err := record.ReplyEvidence(d.Evidence)
			if err != nil {
				return nil, err
			}
			entries[i].Reply = reply
			if reply == nil {
				entries[i].KeyThumbprint = keys[rp.ParticipantID]
			}
		}
	}
	revisions := make([]room.ArtifactRevision, len(rev.History))
	for i, r := range rev.History {
		revisions[i] = room.ArtifactRevision{Number: r.Number, RevisionDigest: r.RevisionDigest, TermsDigest: r.TermsDigest,
			LockedAt: canon.FormatSeconds(r.LockedAt), Deadline: r.Deadline}
	}
	md := room.RenderArtifact(room.ArtifactInput{
		Locked: room.Locked{Revision: revision, Canonical: rev.Canonical, Markdown: rev.Markdown, RevisionDigest: rev.RevisionDigest, MarkdownDigest: rev.MarkdownDigest, TermsDigest: rev.TermsDigest},
		Roster: entries, ChainHead: last.Hash, ChainLength: last.Seq, FinalizedAt: canon.FormatTime(now), DecidingID: outcome.DecidingEventID,
		Revisions: revisions,
	})
	return []byte(md), nil
}
