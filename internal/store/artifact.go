package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// Artifact is an agreement's CONSENSUS.md, stored once when the outcome
// becomes reached.
type Artifact struct {
	AgreementID uuid.UUID
	Revision    int
	Body        []byte
	SHA256      string
	FinalizedAt time.Time
}

// ArtifactInsert stores the artifact. A second one for the agreement is
// room.ErrConflict.
func (q queries) ArtifactInsert(ctx context.Context, a Artifact) error {
	err := q.q.ArtifactInsert(ctx, dbsqlc.ArtifactInsertParams{
		AgreementID: a.AgreementID, Revision: int32(a.Revision), Body: a.Body, Sha256: a.SHA256, FinalizedAt: a.FinalizedAt,
	})
	return interpretError("insert artifact", err)
}

// ArtifactGet reads an agreement's artifact, or room.ErrNotFound while there
// is none.
func (q queries) ArtifactGet(ctx context.Context, agreementID uuid.UUID) (Artifact, error) {
	r, err := q.q.ArtifactGet(ctx, agreementID)
	if err != nil {
		return Artifact{}, interpretError("get artifact", err)
	}
	return Artifact{AgreementID: r.AgreementID, Revision: int(r.Revision), Body: r.Body, SHA256: r.Sha256, FinalizedAt: r.FinalizedAt}, nil
}
