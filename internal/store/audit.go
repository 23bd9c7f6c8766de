package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/audit"
	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
	"github.com/consensus-md/consensus/internal/workspace"
)

// AuditRecord is what an audit entry says, before the chain gives it its
// place (seq, prev, hash).
type AuditRecord struct {
	WorkspaceID   uuid.UUID
	At            time.Time // truncated to the microsecond (canon.Now)
	Actor         workspace.Actor
	Action        string
	Targets       map[string]string
	RequestID     string
	ClientAddress string
	Result        string
}

// AuditAppend appends r to its workspace's chain and returns the stored
// entry. It locks the workspace's chain head until the transaction ends,
// so callers append last, just before they commit: the lock then serializes
// only the commits of one workspace's operator actions.
func (tx *Tx) AuditAppend(ctx context.Context, r AuditRecord) (audit.Entry, error) {
	head, err := tx.q.WorkspaceAuditHead(ctx, r.WorkspaceID)
	if err != nil {
		return audit.Entry{}, interpretError("lock audit head", err)
	}
	targets := r.Targets
	if targets == nil {
		targets = map[string]string{}
	}
	e := audit.Entry{WorkspaceID: r.WorkspaceID.String(), Seq: head.AuditHeadSeq + 1, ID: uuid.New().String(), At: canon.FormatTime(r.At),
		Actor: audit.Actor{Kind: r.Actor.Kind, ID: r.Actor.ID, Name: r.Actor.Name}, Action: r.Action, Targets: targets,
		RequestID: r.RequestID, ClientAddress: r.ClientAddress, Result: r.Result, Prev: head.AuditHeadHash}
	if e.Hash, err = audit.Hash(e); err != nil {
		return audit.Entry{}, err
	}
	tj, err := json.Marshal(targets)
	if err != nil {
		return audit.Entry{}, fmt.Errorf("store: audit targets: %w", err)
	}
	err = tx.q.AuditInsert(ctx, dbsqlc.AuditInsertParams{WorkspaceID: r.WorkspaceID, Seq: e.Seq, ID: uuid.MustParse(e.ID), At: r.At,
		ActorKind: e.Actor.Kind, ActorID: e.Actor.ID, ActorName: e.Actor.Name, Action: e.Action, Targets: tj,
		RequestID: e.RequestID, ClientAddress: e.ClientAddress, Result: e.Result, PrevHash: e.Prev, Hash: e.Hash})
	if err != nil {
		return audit.Entry{}, interpretError("insert audit entry", err)
	}
	err = tx.q.WorkspaceAuditAdvance(ctx, dbsqlc.WorkspaceAuditAdvanceParams{ID: r.WorkspaceID, AuditHeadSeq: e.Seq, AuditHeadHash: e.Hash})
	if err != nil {
		return audit.Entry{}, interpretError("advance audit head", err)
	}
	return e, nil
}

// AuditList returns up to limit entries of a workspace after seq, oldest
// first.
func (q queries) AuditList(ctx context.Context, workspaceID uuid.UUID, after int64, limit int) ([]audit.Entry, error) {
	rows, err := q.q.AuditList(ctx, dbsqlc.AuditListParams{WorkspaceID: workspaceID, Seq: after, Limit: int32(limit)})
	if err != nil {
		return nil, interpretError("list audit entries", err)
	}
	return auditEntries(rows)
}

// AuditFilter narrows an audit listing; an empty member matches every
// entry. Actor matches an actor's id exactly or a piece of its name in any
// case, Action an action exactly, AgreementID the agreementId target.
type AuditFilter struct {
	Actor, Action, AgreementID string
}

func (f AuditFilter) params() (actor, action, agreement *string) {
	return nullable(f.Actor), nullable(f.Action), nullable(f.AgreementID)
}

// AuditSearch returns up to limit entries of a workspace that f admits:
// with newest unset, those after seq from, oldest first; with newest set,
// those before seq from (0: from the newest), newest first.
func (q queries) AuditSearch(ctx context.Context, workspaceID uuid.UUID, f AuditFilter, from int64, newest bool, limit int) ([]audit.Entry, error) {
	actor, action, agreement := f.params()
	var rows []dbsqlc.AuditEntry
	var err error
	if newest {
		if from <= 0 {
			from = math.MaxInt64
		}
		rows, err = q.q.AuditSearchNewest(ctx, dbsqlc.AuditSearchNewestParams{WorkspaceID: workspaceID, BeforeSeq: from, Actor: actor, Action: action, AgreementID: agreement, RowLimit: int32(limit)})
	} else {
		rows, err = q.q.AuditSearch(ctx, dbsqlc.AuditSearchParams{WorkspaceID: workspaceID, AfterSeq: from, Actor: actor, Action: action, AgreementID: agreement, RowLimit: int32(limit)})
	}
	if err != nil {
		return nil, interpretError("search audit entries", err)
	}
	return auditEntries(rows)
}

func auditEntries(rows []dbsqlc.AuditEntry) ([]audit.Entry, error) {
	out := make([]audit.Entry, len(rows))
	for i, r := range rows {
		targets := map[string]string{}
		if err := json.Unmarshal(r.Targets, &targets); err != nil {
			return nil, fmt.Errorf("store: audit entry %d targets: %w", r.Seq, err)
		}
		out[i] = audit.Entry{WorkspaceID: r.WorkspaceID.String(), Seq: r.Seq, ID: r.ID.String(), At: canon.FormatTime(r.At),
			Actor: audit.Actor{Kind: r.ActorKind, ID: r.ActorID, Name: r.ActorName}, Action: r.Action, Targets: targets,
			RequestID: r.RequestID, ClientAddress: r.ClientAddress, Result: r.Result, Prev: r.PrevHash, Hash: r.Hash}
	}
	return out, nil
}

// AuditGuardInstalled reports whether the database has the audit guard's
// three event triggers, enabled (deploy/kubernetes/overlays/cloudnativepg/
// audit-guard.sql): without them the service's role, which owns
// audit_entries, could take its append-only trigger out of the way.
func (s *Store) AuditGuardInstalled(ctx context.Context) (bool, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_event_trigger
		WHERE evtname IN ('consensus_audit_guard_start', 'consensus_audit_guard_end', 'consensus_audit_guard_drop') AND evtenabled <> 'D'`).Scan(&n)
	return n == 3, interpretError("read event triggers", err)
}
