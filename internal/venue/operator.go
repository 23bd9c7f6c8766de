package venue

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/workspace"
)

// OperatorCall is one request of the operator API: who asks (the
// principal its credential names) and what its audit entry records of the
// request.
type OperatorCall struct {
	workspace.Principal
	RequestID     string
	ClientAddress string
}

// The actions an audit entry names.
const (
	ActionAgreementCreate   = "agreement.create"
	ActionAgreementAmend    = "agreement.amend"
	ActionAgreementList     = "agreement.list"
	ActionAgreementRead     = "agreement.read"
	ActionParticipantRevoke = "participant.revoke"
	ActionInvitationResend  = "invitation.resend"
	ActionKeyCreate         = "key.create"
	ActionKeyList           = "key.list"
	ActionKeyRevoke         = "key.revoke"
	ActionAuditRead         = "audit.read"
	ActionWorkspaceCreate   = "workspace.create"
	ActionOperatorAdd       = "operator.add"
)

// ResultOK is the result of an action that succeeded; a refused one's is
// the problem code it was answered with.
const ResultOK = "ok"

// inWorkspace runs fn in a transaction of the call's workspace (see
// store.InWorkspace).
func (v *Venue) inWorkspace(ctx context.Context, c OperatorCall, fn func(tx *store.Tx) error) error {
	return v.Store.InWorkspace(ctx, c.WorkspaceID, fn)
}

// audited appends the audit entry of a successful action to tx: the last
// statement of the action's transaction, so the entry commits exactly when
// the action does.
func (v *Venue) audited(ctx context.Context, tx *store.Tx, c OperatorCall, action string, targets map[string]string) error {
	_, err := tx.AuditAppend(ctx, v.auditRecord(c, action, targets, ResultOK))
	return err
}

func (v *Venue) auditRecord(c OperatorCall, action string, targets map[string]string, result string) store.AuditRecord {
	return store.AuditRecord{WorkspaceID: c.WorkspaceID, At: canon.Now(v.now()), Actor: c.Actor, Action: action, Targets: targets,
		RequestID: c.RequestID, ClientAddress: c.ClientAddress, Result: result}
}

// RecordRefusal appends the audit entry of an action that was refused
// (result is the problem code of the answer) in its own transaction.
func (v *Venue) RecordRefusal(ctx context.Context, c OperatorCall, action string, targets map[string]string, result string) error {
	err := v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		_, err := tx.AuditAppend(ctx, v.auditRecord(c, action, targets, result))
		return err
	})
	if err != nil {
		return fmt.Errorf("venue: record refusal: %w", err)
	}
	return nil
}

// ownedBy is the service's own wall between workspaces, in front of
// row-level security: a row of another workspace is not found.
func ownedBy(c OperatorCall, workspaceID uuid.UUID) error {
	if workspaceID != c.WorkspaceID {
		return room.ErrNotFound
	}
	return nil
}
