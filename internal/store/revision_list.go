package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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
	// Deadline is the revision's deadline as its canonical object states it.
	Deadline string
}

// RevisionList returns every revision of an agreement, oldest first.
func (q queries) RevisionList(ctx context.Context, agreementID uuid.UUID) ([]RevisionSummary, error) {
	rows, err := q.q.RevisionListByAgreement(ctx, agreementID)
	if err != nil {
		return nil, interpretError("list revisions", err)
	}
	return convert(rows, revisionSummaryFrom), nil
}

func revisionSummaryFrom(r dbsqlc.RevisionListByAgreementRow) RevisionSummary {
	return RevisionSummary{Number: int(r.Number), RevisionDigest: r.RevisionDigest, MarkdownDigest: r.MarkdownDigest,
		TermsDigest: r.TermsDigest, LockedAt: r.LockedAt, Deadline: r.Deadline}
}

// historyStep reads the revisions of agreementID into rev.History; rev is
// the current revision, read by an earlier step of the same pipeline (nil:
// nothing to attach to).
func historyStep(ctx context.Context, agreementID uuid.UUID, rev **Revision) step {
	return func(db dbsqlc.DBTX) error {
		rows, err := dbsqlc.New(db).RevisionListByAgreement(ctx, agreementID)
		if err != nil {
			return interpretError("list revisions", err)
		}
		if *rev != nil {
			(*rev).History = convert(rows, revisionSummaryFrom)
		}
		return nil
	}
}

// historyByTokenStep is historyStep for the agreement of a token's owner.
func historyByTokenStep(ctx context.Context, tokenHash []byte, rev **Revision) step {
	return func(db dbsqlc.DBTX) error {
		rows, err := dbsqlc.New(db).RevisionListByToken(ctx, tokenHash)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return interpretError("list revisions", err)
		}
		if *rev != nil {
			(*rev).History = convert(rows, func(r dbsqlc.RevisionListByTokenRow) RevisionSummary {
				return revisionSummaryFrom(dbsqlc.RevisionListByAgreementRow(r))
			})
		}
		return nil
	}
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
