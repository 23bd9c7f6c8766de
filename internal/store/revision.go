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
	// TermsDigest is room.TermsDigest of the canonical revision.
	TermsDigest string
	LockedAt    time.Time
	// History lists every revision up to this one, oldest first, when it
	// was read with it (the hot paths' current revision); otherwise nil.
	History []RevisionSummary
}

// RevisionInsert stores a locked revision. An existing number for the
// agreement is room.ErrConflict.
func (q queries) RevisionInsert(ctx context.Context, r Revision) error {
	err := q.q.RevisionInsert(ctx, dbsqlc.RevisionInsertParams{
		AgreementID: r.AgreementID, Number: int32(r.Number), CanonicalJson: string(r.Canonical), Markdown: r.Markdown,
		RevisionDigest: r.RevisionDigest, MarkdownDigest: r.MarkdownDigest, TermsDigest: r.TermsDigest, LockedAt: r.LockedAt,
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

// RevisionListLocked reads every revision of an agreement in full, oldest
// first, in one statement.
func (q queries) RevisionListLocked(ctx context.Context, agreementID uuid.UUID) ([]Revision, error) {
	rows, err := q.q.RevisionListLocked(ctx, agreementID)
	if err != nil {
		return nil, interpretError("list revisions", err)
	}
	out := make([]Revision, len(rows))
	for i, r := range rows {
		out[i] = revisionFrom(r)
	}
	return out, nil
}

func revisionFrom(r dbsqlc.Revision) Revision {
	return Revision{
		AgreementID: r.AgreementID, Number: int(r.Number), Canonical: []byte(r.CanonicalJson), Markdown: r.Markdown,
		RevisionDigest: r.RevisionDigest, MarkdownDigest: r.MarkdownDigest, TermsDigest: r.TermsDigest, LockedAt: r.LockedAt,
	}
}
