package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// Revision is one locked revision: the exact canonical agreement/v1 bytes
// that were hashed into RevisionDigest, and the Markdown hashed into
// MarkdownDigest. A stored revision never changes.
type Revision struct {
	AgreementID    uuid.UUID
	Number         int
	Canonical      []byte
	Markdown       string
	RevisionDigest string
	MarkdownDigest string
	LockedAt       time.Time
}

// RevisionInsert stores a locked revision. An existing number for the
// agreement is room.ErrConflict.
func (q queries) RevisionInsert(ctx context.Context, r Revision) error {
	err := q.q.RevisionInsert(ctx, dbsqlc.RevisionInsertParams{
		AgreementID: r.AgreementID, Number: int32(r.Number), CanonicalJson: string(r.Canonical), Markdown: r.Markdown,
		RevisionDigest: r.RevisionDigest, MarkdownDigest: r.MarkdownDigest, LockedAt: r.LockedAt,
	})
	return interpretError("insert revision", err)
}

// RevisionGet reads revision number of an agreement, or room.ErrNotFound.
func (q queries) RevisionGet(ctx context.Context, agreementID uuid.UUID, number int) (Revision, error) {
	r, err := q.q.RevisionGet(ctx, dbsqlc.RevisionGetParams{AgreementID: agreementID, Number: int32(number)})
	if err != nil {
		return Revision{}, interpretError("get revision", err)
	}
	return revisionFrom(r), nil
}

func revisionFrom(r dbsqlc.Revision) Revision {
	return Revision{
		AgreementID: r.AgreementID, Number: int(r.Number), Canonical: []byte(r.CanonicalJson), Markdown: r.Markdown,
		RevisionDigest: r.RevisionDigest, MarkdownDigest: r.MarkdownDigest, LockedAt: r.LockedAt,
	}
}
