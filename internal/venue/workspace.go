package venue

import (
	"context"
	"fmt"
	"net/mail"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/workspace"
)

// NewWorkspace is what creates a workspace: its name, its first owner's
// address and, when KeyName is set, an owner API key of that name.
type NewWorkspace struct {
	Name       string
	OwnerEmail string
	KeyName    string
	// Link is how the owner's first enrollment link leaves: LinkPrint
	// returns it, LinkEmail queues its email, LinkNone makes none.
	Link string
}

// How CreateWorkspace gives out the first owner's enrollment link.
const (
	LinkNone  = ""
	LinkPrint = "print"
	LinkEmail = "email"
)

// CreatedWorkspace is a new workspace, its owner, and the owner key's
// token when one was asked for (shown this once).
type CreatedWorkspace struct {
	WorkspaceID string
	OperatorID  string
	OwnerEmail  string
	KeyID       string
	KeyToken    string
	// EnrollmentLink is the owner's link, when it was to be printed.
	EnrollmentLink string
	// EnrollmentQueued: the link's email was queued.
	EnrollmentQueued bool
}

// CreateWorkspace creates a workspace with its first owner (and an owner
// key with every scope when in.KeyName is set) in one transaction, and
// records it as the first entries of the workspace's audit log, made by
// the command line. A name in use is room.ErrConflict; bad input
// *room.ValidationError.
func (v *Venue) CreateWorkspace(ctx context.Context, in NewWorkspace) (*CreatedWorkspace, error) {
	if err := room.ValidateLine("name", in.Name, 1, 100); err != nil {
		return nil, err
	}
	email := workspace.NormalizeEmail(in.OwnerEmail)
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || a.Name != "" {
		return nil, &room.ValidationError{Field: "owner-email", Reason: "must be one email address, such as owner@example.com"}
	}
	if in.KeyName != "" {
		if err := room.ValidateLine("key", in.KeyName, 1, 100); err != nil {
			return nil, err
		}
	}
	now := canon.Now(v.now())
	ws, op := uuid.New(), uuid.New()
	out := &CreatedWorkspace{WorkspaceID: ws.String(), OperatorID: op.String(), OwnerEmail: email}
	c := OperatorCall{Principal: workspace.Principal{WorkspaceID: ws, Actor: workspace.Actor{Kind: workspace.ActorCLI, Name: "consensusd workspace create"},
		Scopes: workspace.AllScopes}, RequestID: "", ClientAddress: ""}
	var key store.APIKey
	if in.KeyName != "" {
		out.KeyToken = secret.NewAPIKey()
		key = store.APIKey{ID: uuid.New(), WorkspaceID: ws, Name: in.KeyName, TokenHash: secret.Hash(out.KeyToken), Scopes: workspace.AllScopes,
			CreatedAt: now, CreatedBy: workspace.Actor{Kind: workspace.ActorCLI}}
		out.KeyID = key.ID.String()
	}
	err := v.Store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.WorkspaceInsert(ctx, store.Workspace{ID: ws, Name: in.Name, CreatedAt: now}); err != nil {
			return err
		}
		if _, err := tx.AuditAppend(ctx, v.auditRecord(c, ActionWorkspaceCreate, map[string]string{"workspaceId": ws.String()}, ResultOK)); err != nil {
			return err
		}
		if err := tx.OperatorInsert(ctx, store.Operator{ID: op, WorkspaceID: ws, Email: email, Role: workspace.RoleOwner, CreatedAt: now}); err != nil {
			return err
		}
		if _, err := tx.AuditAppend(ctx, v.auditRecord(c, ActionOperatorAdd, map[string]string{"operatorId": op.String()}, ResultOK)); err != nil {
			return err
		}
		if in.Link != LinkNone {
			owner := store.Operator{ID: op, WorkspaceID: ws, Email: email, Role: workspace.RoleOwner, CreatedAt: now}
			e, link := v.newEnrollment(owner, in.Name, in.Link == LinkEmail, now)
			if err := tx.EnrollmentInsert(ctx, e); err != nil {
				return err
			}
			if in.Link == LinkPrint {
				out.EnrollmentLink = link
			} else {
				out.EnrollmentQueued = true
			}
		}
		if in.KeyName == "" {
			return nil
		}
		if err := tx.APIKeyInsert(ctx, key); err != nil {
			return err
		}
		_, err := tx.AuditAppend(ctx, v.auditRecord(c, ActionKeyCreate, map[string]string{"keyId": key.ID.String()}, ResultOK))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("venue: create workspace: %w", err)
	}
	return out, nil
}
