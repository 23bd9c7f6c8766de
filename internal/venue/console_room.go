package venue

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// What an agreement's console page shows beside the operator's view: the
// locked terms of every revision, the conversation as the participants
// read it, and, once final, where the outcome's files are and their
// SHA-256, the same the participants' room and routes state.

// consoleRead is what readAgreement reads for the console, in its
// transaction.
type consoleRead struct {
	revisions []store.Revision
	events    []store.Event
	artifact  *store.Artifact // once reached
	record    *store.Record   // once issued
}

func readConsole(ctx context.Context, tx *store.Tx, a store.Agreement) (*consoleRead, error) {
	var r consoleRead
	var err error
	if r.revisions, err = tx.RevisionListLocked(ctx, a.ID); err != nil {
		return nil, err
	}
	if r.events, err = tx.EventListByAgreement(ctx, a.ID); err != nil {
		return nil, err
	}
	if a.Outcome.Status == room.StatusReached {
		art, err := tx.ArtifactGet(ctx, a.ID)
		if err != nil && !errors.Is(err, room.ErrNotFound) {
			return nil, err
		}
		if err == nil {
			r.artifact = &art
		}
	}
	if a.Outcome.Status != room.StatusPending {
		rec, err := tx.RecordGet(ctx, a.ID)
		if err != nil && !errors.Is(err, room.ErrNotFound) {
			return nil, err
		}
		if err == nil {
			r.record = &rec
		}
	}
	return &r, nil
}

// ConsoleRevision is one locked revision: its digests and its canonical
// object (title, objective, rules, decision rule, deadline, roster).
type ConsoleRevision struct {
	RevisionSummaryView
	CanonicalRevision json.RawMessage `json:"canonicalRevision"`
}

// ConsoleEvent is an event as the participants' room shows it, with the
// name and kind of the participant who wrote it: its body is that
// participant's text, never the service's.
type ConsoleEvent struct {
	EventView
	DisplayName string `json:"displayName"`
	Kind        string `json:"kind"`
}

// ConsoleFile is one of the outcome's files: the console route that
// serves it, the name it is saved under, and the SHA-256 of its bytes.
type ConsoleFile struct {
	URL      string `json:"url"`
	FileName string `json:"fileName"`
	SHA256   string `json:"sha256"`
	Bytes    int    `json:"bytes"`
}

// ConsoleRoom is the console's additions to an agreement's page.
// Consensus is the outcome's CONSENSUS.md once reached (the participants'
// artifact); Record the signed consensus-record/v1 once issued (a final
// outcome's record is issued when first read: until then it is null).
type ConsoleRoom struct {
	Revisions []ConsoleRevision `json:"revisions"`
	Events    []ConsoleEvent    `json:"events"`
	Consensus *ConsoleFile      `json:"consensus"`
	Record    *ConsoleFile      `json:"record"`
}

func consoleRoom(r *agreementRead) *ConsoleRoom {
	cr := r.console
	out := &ConsoleRoom{Revisions: make([]ConsoleRevision, len(cr.revisions)), Events: make([]ConsoleEvent, len(cr.events))}
	for i, rev := range cr.revisions {
		out.Revisions[i] = ConsoleRevision{RevisionSummaryView{Number: rev.Number, RevisionDigest: rev.RevisionDigest, MarkdownDigest: rev.MarkdownDigest,
			TermsDigest: rev.TermsDigest, LockedAt: canon.FormatTime(rev.LockedAt)}, json.RawMessage(rev.Canonical)}
	}
	who := map[uuid.UUID]store.Participant{}
	for _, p := range r.parts {
		who[p.ID] = p
	}
	for i, e := range cr.events {
		p := who[e.ParticipantID]
		out.Events[i] = ConsoleEvent{EventView: eventView(e), DisplayName: p.DisplayName, Kind: p.Kind}
	}
	base := "/console/api/agreements/" + r.a.ID.String()
	if a := cr.artifact; a != nil {
		out.Consensus = &ConsoleFile{URL: base + "/artifact", FileName: "CONSENSUS.md", SHA256: a.SHA256, Bytes: len(a.Body)}
	}
	if rec := cr.record; rec != nil {
		out.Record = &ConsoleFile{URL: base + "/record", FileName: "consensus-record-" + r.a.ID.String() + ".json", SHA256: rec.SHA256, Bytes: len(rec.Body)}
	}
	return out
}

// ConsoleArtifact is Artifact for an operator: the outcome's CONSENSUS.md
// of an agreement of the call's workspace once reached
// (ErrArtifactNotReady before); another workspace's is room.ErrNotFound.
func (v *Venue) ConsoleArtifact(ctx context.Context, c OperatorCall, agreementID string) (*Artifact, error) {
	p, err := v.consolePrincipal(ctx, c, agreementID)
	if err != nil {
		return nil, err
	}
	return v.Artifact(ctx, p)
}
