package store

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// RoomRequest names what a room read needs beyond what its caller holds.
type RoomRequest struct {
	AgreementID uuid.UUID
	// After is the last seq the caller holds: only later events are read.
	After int64
	// WithRevision reads the current revision; WithArtifact the artifact's
	// metadata (none while there is no artifact).
	WithRevision bool
	WithArtifact bool
}

// RoomState is one consistent snapshot of a room: every part was read at
// the same instant, so it is exactly the room at Agreement.Version.
type RoomState struct {
	Agreement Agreement
	Roster    []RosterMember
	// Events are the events after the request's After, in order.
	Events []Event
	// Revision is the current revision, when asked for.
	Revision *Revision
	// Artifact is set when asked for and the artifact exists.
	Artifact *ArtifactMeta
}

// ArtifactMeta is what the room states about CONSENSUS.md.
type ArtifactMeta struct {
	SHA256 string
	Bytes  int
}

// RoomRead reads a room in one round trip: a read-only REPEATABLE READ
// transaction whose statements share one snapshot, so the version it
// returns names exactly the state it returns. room.ErrNotFound if the
// agreement does not exist.
func (s *Store) RoomRead(ctx context.Context, req RoomRequest) (RoomState, error) {
	tx, err := s.beginPiped(ctx)
	if err != nil {
		return RoomState{}, err
	}
	defer tx.close(ctx)
	var st RoomState
	var p pipeline
	p.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
	p.add(func(db dbsqlc.DBTX) error {
		r, err := dbsqlc.New(db).AgreementGet(ctx, req.AgreementID)
		if err != nil {
			return interpretError("get agreement", err)
		}
		st.Agreement = agreementFrom(r)
		return nil
	})
	p.add(rosterStep(ctx, req.AgreementID, &st.Roster))
	p.add(func(db dbsqlc.DBTX) error {
		rows, err := dbsqlc.New(db).EventListAfter(ctx, dbsqlc.EventListAfterParams{AgreementID: req.AgreementID, Seq: req.After})
		if err != nil {
			return interpretError("list events after", err)
		}
		st.Events = convert(rows, eventFrom)
		return nil
	})
	if req.WithRevision {
		p.add(revisionStep(ctx, req.AgreementID, &st.Revision))
	}
	if req.WithArtifact {
		p.add(func(db dbsqlc.DBTX) error {
			r, err := dbsqlc.New(db).ArtifactMeta(ctx, req.AgreementID)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				return nil
			case err != nil:
				return interpretError("get artifact metadata", err)
			}
			st.Artifact = &ArtifactMeta{SHA256: r.Sha256, Bytes: int(r.Bytes)}
			return nil
		})
	}
	p.exec("COMMIT")
	if err := tx.send(ctx, &p); err != nil {
		return RoomState{}, err
	}
	return st, nil
}
