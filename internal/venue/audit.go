package venue

import (
	"context"

	"github.com/consensus-md/consensus/internal/audit"
	"github.com/consensus-md/consensus/internal/store"
)

// AuditPage is a page of a workspace's audit log, oldest first.
// NextAfter, when set, is the after of the next page.
type AuditPage struct {
	Entries   []audit.Entry `json:"entries"`
	NextAfter *int64        `json:"nextAfter"`
}

// MaxAuditPage is the most entries one page holds.
const MaxAuditPage = 1000

// ListAudit returns up to limit entries of the call's workspace after seq
// after (0: from the first).
func (v *Venue) ListAudit(ctx context.Context, c OperatorCall, after int64, limit int) (*AuditPage, error) {
	if limit <= 0 || limit > MaxAuditPage {
		limit = 100
	}
	var entries []audit.Entry
	err := v.inWorkspace(ctx, c, func(tx *store.Tx) (err error) {
		entries, err = tx.AuditList(ctx, c.WorkspaceID, after, limit+1)
		return err
	})
	if err != nil {
		return nil, err
	}
	page := &AuditPage{Entries: entries}
	if len(entries) > limit {
		page.Entries = entries[:limit]
		page.NextAfter = ptr(entries[limit-1].Seq)
	}
	return page, nil
}
