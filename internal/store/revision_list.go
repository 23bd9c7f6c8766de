package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// RevisionSummary is one locked revision without its canonical bytes and
// Markdown: what the room's history of revisions shows.
type RevisionSummary struct {
	Number         int
	RevisionDigest string
	MarkdownDigest string
	TermsDigest    string
	LockedAt       time.Time
}

// RevisionList returns every revision of an agreement, oldest first.
func (q queries) RevisionList(ctx context.Context, agreementID uuid.UUID) ([]RevisionSummary, error) {
	rows, err := q.q.RevisionListByAgreement(ctx, agreementID)
	if err != nil {
		return nil, interpretError("list revisions", err)
	}
	return convert(rows, func(r dbsqlc.RevisionListByAgreementRow) RevisionSummary {
		return RevisionSummary{Number: int(r.Number), RevisionDigest: r.RevisionDigest, MarkdownDigest: r.MarkdownDigest, TermsDigest: r.TermsDigest, LockedAt: r.LockedAt}
	}), nil
}

// Terms maps each revision's number to its terms digest, as room.History
// reads them.
func Terms(revs []RevisionSummary) map[int]string {
	out := make(map[int]string, len(revs))
	for _, r := range revs {
		out[r.Number] = r.TermsDigest
	}
	return out
}
