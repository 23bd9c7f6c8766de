package venue

import (
	"context"

	"github.com/consensus-md/consensus/internal/audit"
	"github.com/consensus-md/consensus/internal/store"
)

// AuditPage is a page of a workspace's audit log. Oldest first, NextAfter,
// when set, is the after of the next page; newest first, NextBefore, when
// present, is the before of the next page (and NextAfter is null).
type AuditPage struct {
	Entries    []audit.Entry `json:"entries"`
	NextAfter  *int64        `json:"nextAfter"`
	NextBefore *int64        `json:"nextBefore,omitempty"`
}

// MaxAuditPage is the most entries one page holds.
const MaxAuditPage = 1000

// AuditQuery selects a page of the audit log: the entries the filter
// admits, oldest first after seq After, or (Newest) newest first before
// seq Before (0: from the newest).
type AuditQuery struct {
	store.AuditFilter
	After, Before int64
	Newest        bool
	Limit         int
}

// ListAudit returns up to limit entries of the call's workspace after seq
// after (0: from the first).
func (v *Venue) ListAudit(ctx context.Context, c OperatorCall, after int64, limit int) (*AuditPage, error) {
	return v.SearchAudit(ctx, c, AuditQuery{After: after, Limit: limit})
}

// SearchAudit returns a page of the call's workspace's audit log as q
// selects it; the filtering and the paging happen in the database, so a
// page holds up to q.Limit matching entries however far apart they lie.
func (v *Venue) SearchAudit(ctx context.Context, c OperatorCall, q AuditQuery) (*AuditPage, error) {
	limit := q.Limit
	if limit <= 0 || limit > MaxAuditPage {
		limit = 100
	}
	from := q.After
	if q.Newest {
		from = q.Before
	}
	var entries []audit.Entry
	err := v.inWorkspace(ctx, c, func(tx *store.Tx) (err error) {
		entries, err = tx.AuditSearch(ctx, c.WorkspaceID, q.AuditFilter, from, q.Newest, limit+1)
		return err
	})
	if err != nil {
		return nil, err
	}
	page := &AuditPage{Entries: entries}
	if len(entries) > limit {
		page.Entries = entries[:limit]
		next := ptr(entries[limit-1].Seq)
		if q.Newest {
			page.NextBefore = next
		} else {
			page.NextAfter = next
		}
	}
	return page, nil
}
