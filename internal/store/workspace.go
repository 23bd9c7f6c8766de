package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// Row-level security on every workspace-owned table (migration 00012) lets
// a statement see, and write, a row when either setting below admits it:
//
//   - consensus.scope = 'service', a start-up parameter of the store's main
//     pool and its lookup pool: the participant routes, the API key lookup,
//     the background workers and migrations. They reach rows by a secret's
//     hash or an id they already hold, and mix workspaces in one
//     transaction (a batch of appends), so they pay nothing per request.
//   - consensus.workspace_id, set for one transaction by InWorkspace on the
//     operator pool, whose connections carry consensus.scope = 'workspace'
//     and therefore see nothing outside a workspace transaction.
//
// A connection with neither (psql, a forgotten code path) sees no rows.
// The settings are not secrets: any connection may set them. The wall they
// build stands against the service's own mistakes (an operator query that
// forgets its workspace), not against a client that can send SQL.
const (
	scopeParam       = "consensus.scope"
	scopeService     = "service"
	scopeWorkspace   = "workspace"
	workspaceSetting = "consensus.workspace_id"
)

// operatorPool opens the operator API's connections on cfg's server and
// settings, with the workspace scope. Operators are few: a quarter of the
// main pool (at least four) keeps the server's connection count close to
// what it was.
func operatorPool(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	cfg = cfg.Copy()
	cfg.MaxConns, cfg.MinConns = max(4, cfg.MaxConns/4), 0
	cfg.ConnConfig.RuntimeParams[scopeParam] = scopeWorkspace
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	return pool, nil
}

// InWorkspace runs fn in a transaction that sees only the rows of one
// workspace, as InTx runs one that sees every row (with InTx's retries and
// errors). Setting the workspace costs no round trip of its own: it is sent
// with BEGIN, in one simple-protocol message (a uuid.UUID formats as hex
// digits and dashes only, so it is safe inside the literal).
func (s *Store) InWorkspace(ctx context.Context, workspaceID uuid.UUID, fn func(tx *Tx) error) error {
	begin := fmt.Sprintf("begin; select set_config('%s', '%s', true)", workspaceSetting, workspaceID.String())
	return s.retryTx(ctx, s.ops, pgx.TxOptions{BeginQuery: begin}, fn)
}

// Workspace is a workspace's identity.
type Workspace struct {
	ID        uuid.UUID
	Name      string
	CreatedAt time.Time
}

// WorkspaceInsert stores a new workspace; a name in use is room.ErrConflict.
func (q queries) WorkspaceInsert(ctx context.Context, w Workspace) error {
	err := q.q.WorkspaceInsert(ctx, dbsqlc.WorkspaceInsertParams{ID: w.ID, Name: w.Name, CreatedAt: w.CreatedAt})
	return interpretError("insert workspace", err)
}

// WorkspaceGet reads a workspace, or room.ErrNotFound (also for one the
// transaction's workspace scope hides).
func (q queries) WorkspaceGet(ctx context.Context, id uuid.UUID) (Workspace, error) {
	r, err := q.q.WorkspaceGet(ctx, id)
	if err != nil {
		return Workspace{}, interpretError("get workspace", err)
	}
	return Workspace{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt}, nil
}

// WorkspaceGetByName reads a workspace by its name, or room.ErrNotFound.
func (q queries) WorkspaceGetByName(ctx context.Context, name string) (Workspace, error) {
	r, err := q.q.WorkspaceGetByName(ctx, name)
	if err != nil {
		return Workspace{}, interpretError("get workspace", err)
	}
	return Workspace{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt}, nil
}

// Operator is a person who runs a workspace.
type Operator struct {
	ID          uuid.UUID
	WorkspaceID uuid.UUID
	// Email is normalized (workspace.NormalizeEmail).
	Email     string
	Role      string
	CreatedAt time.Time
	RemovedAt *time.Time
	// DisplayName is what the console shows beside the address; may be empty.
	DisplayName string
}

// OperatorInsert stores an operator. An address already in use by an
// operator of the workspace is room.ErrConflict.
func (q queries) OperatorInsert(ctx context.Context, o Operator) error {
	err := q.q.OperatorInsert(ctx, dbsqlc.OperatorInsertParams{ID: o.ID, WorkspaceID: o.WorkspaceID, Email: o.Email, Role: o.Role, CreatedAt: o.CreatedAt})
	return interpretError("insert operator", err)
}

// OperatorList returns a workspace's operators not removed, oldest first.
func (q queries) OperatorList(ctx context.Context, workspaceID uuid.UUID) ([]Operator, error) {
	rows, err := q.q.OperatorList(ctx, workspaceID)
	if err != nil {
		return nil, interpretError("list operators", err)
	}
	out := make([]Operator, len(rows))
	for i, r := range rows {
		out[i] = Operator{ID: r.ID, WorkspaceID: r.WorkspaceID, Email: r.Email, Role: r.Role, CreatedAt: r.CreatedAt, RemovedAt: r.RemovedAt}
	}
	return out, nil
}

// RoleBypassesRLS reports whether the role the store connects as is a
// superuser or has BYPASSRLS: row-level security would then not bind it,
// and the workspace wall would be the service's checks alone.
func (s *Store) RoleBypassesRLS(ctx context.Context) (bool, error) {
	var bypass bool
	err := s.pool.QueryRow(ctx, `SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user`).Scan(&bypass)
	return bypass, interpretError("read role", err)
}
