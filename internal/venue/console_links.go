package venue

import (
	"context"
	"errors"
	"fmt"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/workspace"
)

// What the deployment's administrator does from the command line beside
// creating workspaces (workspace.go): list them, and give an operator who
// lost their way in (a used or expired link, a lost passkey) a new link.

// ActionOperatorLink is the audit action of a new enrollment link given
// to an existing operator from the command line.
const ActionOperatorLink = "operator.link"

// ListWorkspaces returns every workspace of the deployment, oldest first,
// with its present operators and its agreements counted.
func (v *Venue) ListWorkspaces(ctx context.Context) ([]store.ListedWorkspace, error) {
	var out []store.ListedWorkspace
	err := v.Store.InTx(ctx, func(tx *store.Tx) (err error) {
		out, err = tx.WorkspaceList(ctx)
		return err
	})
	return out, err
}

// OperatorLink is a new enrollment link for an operator of a workspace.
type OperatorLink struct {
	WorkspaceID, OperatorID, Email, Role string
	// Link is the printed link; Withdrawn counts the unused links it
	// replaced, which no longer work.
	Link      string
	Withdrawn int64
}

// NewOperatorLink issues a single-use enrollment link for the present
// operator email of the workspace named workspaceName, withdraws the
// operator's unused links, and records it in the workspace's audit log,
// made by the command line, all in one transaction. An unknown workspace
// or operator is a *room.ValidationError naming the flag.
func (v *Venue) NewOperatorLink(ctx context.Context, workspaceName, email string) (*OperatorLink, error) {
	ws, err := v.Store.WorkspaceGetByName(ctx, workspaceName)
	if errors.Is(err, room.ErrNotFound) {
		return nil, &room.ValidationError{Field: "workspace", Reason: fmt.Sprintf("no workspace is named %q (consensusd workspace list names them)", workspaceName)}
	}
	if err != nil {
		return nil, err
	}
	email = workspace.NormalizeEmail(email)
	c := OperatorCall{Principal: workspace.Principal{WorkspaceID: ws.ID, Actor: workspace.Actor{Kind: workspace.ActorCLI, Name: "consensusd operator link"},
		Scopes: workspace.AllScopes}}
	var out *OperatorLink
	err = v.Store.InWorkspace(ctx, ws.ID, func(tx *store.Tx) error {
		ops, err := tx.OperatorListAll(ctx, ws.ID)
		if err != nil {
			return err
		}
		var op *store.Operator
		for i := range ops {
			if ops[i].Email == email && ops[i].RemovedAt == nil {
				op = &ops[i]
			}
		}
		if op == nil {
			return &room.ValidationError{Field: "email", Reason: fmt.Sprintf("%s is not an operator of %s: an owner invites new operators from the console", email, workspaceName)}
		}
		now := canon.Now(v.now())
		n, err := tx.EnrollmentWithdrawForOperator(ctx, op.ID, now)
		if err != nil {
			return err
		}
		e, link := v.newEnrollment(*op, ws.Name, false, now)
		if err := tx.EnrollmentInsert(ctx, e); err != nil {
			return err
		}
		out = &OperatorLink{WorkspaceID: ws.ID.String(), OperatorID: op.ID.String(), Email: op.Email, Role: op.Role, Link: link, Withdrawn: n}
		return v.audited(ctx, tx, c, ActionOperatorLink, map[string]string{"operatorId": op.ID.String()})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
