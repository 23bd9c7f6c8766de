package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// EnrollmentWithdrawForOperator withdraws an operator's unused links (a
// newer one replaces them) and erases their unsent emails' bodies; it
// returns how many it withdrew.
func (q queries) EnrollmentWithdrawForOperator(ctx context.Context, operatorID uuid.UUID, at time.Time) (int64, error) {
	n, err := q.q.EnrollmentWithdrawForOperator(ctx, dbsqlc.EnrollmentWithdrawForOperatorParams{OperatorID: operatorID, WithdrawnAt: &at})
	return n, interpretError("withdraw enrollments", err)
}

// PasskeyLockForOperator locks an operator's passkeys until the
// transaction ends and returns their credential ids.
func (q queries) PasskeyLockForOperator(ctx context.Context, operatorID uuid.UUID) ([][]byte, error) {
	ids, err := q.q.PasskeyLockForOperator(ctx, operatorID)
	return ids, interpretError("lock passkeys", err)
}

// PasskeyDelete deletes one of an operator's passkeys; false when it has
// no such passkey.
func (q queries) PasskeyDelete(ctx context.Context, operatorID uuid.UUID, credentialID []byte) (bool, error) {
	n, err := q.q.PasskeyDelete(ctx, dbsqlc.PasskeyDeleteParams{OperatorID: operatorID, CredentialID: credentialID})
	return n == 1, interpretError("delete passkey", err)
}

// ListedWorkspace is a workspace with its present operators and its
// agreements counted.
type ListedWorkspace struct {
	Workspace
	Operators, Agreements int64
}

// WorkspaceList returns every workspace, oldest first, with its counts.
func (q queries) WorkspaceList(ctx context.Context) ([]ListedWorkspace, error) {
	rows, err := q.q.WorkspaceList(ctx)
	if err != nil {
		return nil, interpretError("list workspaces", err)
	}
	out := make([]ListedWorkspace, len(rows))
	for i, r := range rows {
		out[i] = ListedWorkspace{Workspace{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt}, r.Operators, r.Agreements}
	}
	return out, nil
}
