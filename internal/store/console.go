package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/jobs"
	"github.com/consensus-md/consensus/internal/store/internal/dbsqlc"
)

// The console's people: operators with display names, their enrollment
// links, passkeys, sessions and WebAuthn ceremonies (migration 00017).
// Lookups by a secret's hash (a link, a session) run on the service scope,
// before the workspace is known; the rest inside a workspace transaction.

func operatorOf(r dbsqlc.Operator) Operator {
	return Operator{ID: r.ID, WorkspaceID: r.WorkspaceID, Email: r.Email, Role: r.Role, CreatedAt: r.CreatedAt, RemovedAt: r.RemovedAt, DisplayName: r.DisplayName}
}

// OperatorGet reads an operator by id in any workspace the transaction
// sees, or room.ErrNotFound.
func (q queries) OperatorGet(ctx context.Context, id uuid.UUID) (Operator, error) {
	r, err := q.q.OperatorGet(ctx, id)
	if err != nil {
		return Operator{}, interpretError("get operator", err)
	}
	return operatorOf(r), nil
}

// OperatorInsertNamed stores an operator with its display name; an
// address in use in the workspace is room.ErrConflict.
func (q queries) OperatorInsertNamed(ctx context.Context, o Operator) error {
	err := q.q.OperatorInsertNamed(ctx, dbsqlc.OperatorInsertNamedParams{ID: o.ID, WorkspaceID: o.WorkspaceID, Email: o.Email, Role: o.Role, CreatedAt: o.CreatedAt, DisplayName: o.DisplayName})
	return interpretError("insert operator", err)
}

// OperatorListAll returns a workspace's operators, removed ones included.
func (q queries) OperatorListAll(ctx context.Context, workspaceID uuid.UUID) ([]Operator, error) {
	rows, err := q.q.OperatorListAll(ctx, workspaceID)
	if err != nil {
		return nil, interpretError("list operators", err)
	}
	out := make([]Operator, len(rows))
	for i, r := range rows {
		out[i] = operatorOf(r)
	}
	return out, nil
}

// OperatorSetRole changes a present operator's role, or room.ErrNotFound.
func (q queries) OperatorSetRole(ctx context.Context, workspaceID, id uuid.UUID, role string) (Operator, error) {
	r, err := q.q.OperatorSetRole(ctx, dbsqlc.OperatorSetRoleParams{WorkspaceID: workspaceID, ID: id, Role: role})
	if err != nil {
		return Operator{}, interpretError("set operator role", err)
	}
	return operatorOf(r), nil
}

// OperatorSetName sets a present operator's display name.
func (q queries) OperatorSetName(ctx context.Context, id uuid.UUID, name string) error {
	return interpretError("set operator name", q.q.OperatorSetName(ctx, dbsqlc.OperatorSetNameParams{ID: id, DisplayName: name}))
}

// OperatorRemove removes a present operator, ends its sessions and voids
// its unused links, in the caller's transaction; room.ErrNotFound when
// there is no such operator (or it was removed already).
func (tx *Tx) OperatorRemove(ctx context.Context, workspaceID, id uuid.UUID, at time.Time) (Operator, error) {
	r, err := tx.q.OperatorRemove(ctx, dbsqlc.OperatorRemoveParams{WorkspaceID: workspaceID, ID: id, RemovedAt: &at})
	if err != nil {
		return Operator{}, interpretError("remove operator", err)
	}
	if _, err := tx.q.ConsoleSessionDeleteForOperator(ctx, id); err != nil {
		return Operator{}, interpretError("end operator sessions", err)
	}
	if err := tx.q.EnrollmentRevokeForOperator(ctx, dbsqlc.EnrollmentRevokeForOperatorParams{OperatorID: id, UsedAt: &at}); err != nil {
		return Operator{}, interpretError("void enrollment links", err)
	}
	return operatorOf(r), nil
}

// OperatorOwnerCount counts a workspace's present owners, after locking
// the workspace's row until the transaction ends. A caller changes an
// owner (OperatorSetRole, OperatorRemove) and then counts: of two
// transactions that each demote or remove one of two owners, the second
// waits here until the first commits, and its count, a statement begun
// after the lock is granted (read committed), sees that commit and finds
// no owner left. Without the lock each counted before the other committed,
// both found one, and both committed. The lock is the audit chain's
// (AuditAppend), taken after the operator rows as the audit entry takes it.
func (q queries) OperatorOwnerCount(ctx context.Context, workspaceID uuid.UUID) (int64, error) {
	if err := q.q.WorkspaceLockOwners(ctx, workspaceID); err != nil {
		return 0, interpretError("lock workspace", err)
	}
	n, err := q.q.OperatorOwnerCount(ctx, workspaceID)
	return n, interpretError("count owners", err)
}

// Enrollment is an operator's enrollment link, with its email when one
// is sent. The email is the outbox message with the link's id (kind
// OutboxEnrollment), sent and recorded as every other email.
type Enrollment struct {
	ID          uuid.UUID
	WorkspaceID uuid.UUID
	OperatorID  uuid.UUID
	TokenHash   []byte
	CreatedAt   time.Time
	ExpiresAt   time.Time
	UsedAt      *time.Time
	// WithdrawnAt is when a newer link replaced this unused one.
	WithdrawnAt *time.Time
	// The email, written by EnrollmentInsert: all empty for a link printed
	// instead of sent. SealedBody is sealed with the link's id as
	// associated data.
	Recipient, Subject, MessageID string
	SealedBody                    []byte
	// State is the email's delivery state (an outbox state), as
	// EnrollmentLatest reads it; empty for a link not emailed.
	State string
}

func enrollmentOf(r dbsqlc.OperatorEnrollment) Enrollment {
	return Enrollment{ID: r.ID, WorkspaceID: r.WorkspaceID, OperatorID: r.OperatorID, TokenHash: r.TokenHash, CreatedAt: r.CreatedAt,
		ExpiresAt: r.ExpiresAt, UsedAt: r.UsedAt, WithdrawnAt: r.WithdrawnAt}
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// EnrollmentInsert stores a link; with a Recipient, its email is queued
// too, as an outbox message with the River job that sends it, in tx.
func (tx *Tx) EnrollmentInsert(ctx context.Context, e Enrollment) error {
	p := dbsqlc.EnrollmentInsertParams{ID: e.ID, WorkspaceID: e.WorkspaceID, OperatorID: e.OperatorID, TokenHash: e.TokenHash, CreatedAt: e.CreatedAt, ExpiresAt: e.ExpiresAt}
	if err := tx.q.EnrollmentInsert(ctx, p); err != nil {
		return interpretError("insert enrollment", err)
	}
	if e.Recipient == "" {
		return nil
	}
	err := tx.q.OutboxInsertEnrollment(ctx, dbsqlc.OutboxInsertEnrollmentParams{ID: e.ID, Recipient: e.Recipient, Subject: e.Subject,
		MessageID: e.MessageID, SealedBody: e.SealedBody, CreatedAt: e.CreatedAt, WorkspaceID: e.WorkspaceID})
	if err != nil {
		return interpretError("insert enrollment email", err)
	}
	return interpretError("queue enrollment email", jobs.InsertTx(ctx, tx.tx, jobs.Email{OutboxID: e.ID}))
}

// EnrollmentGetByTokenHash reads the link a token names, or room.ErrNotFound.
func (q queries) EnrollmentGetByTokenHash(ctx context.Context, hash []byte) (Enrollment, error) {
	r, err := q.q.EnrollmentGetByTokenHash(ctx, hash)
	if err != nil {
		return Enrollment{}, interpretError("get enrollment", err)
	}
	return enrollmentOf(r), nil
}

// EnrollmentUse marks a link used; false when it was used already or has
// expired.
func (q queries) EnrollmentUse(ctx context.Context, id uuid.UUID, at time.Time) (bool, error) {
	n, err := q.q.EnrollmentUse(ctx, dbsqlc.EnrollmentUseParams{ID: id, UsedAt: &at})
	return n == 1, interpretError("use enrollment", err)
}

// EnrollmentLatest returns each operator's newest link in a workspace.
func (q queries) EnrollmentLatest(ctx context.Context, workspaceID uuid.UUID) ([]Enrollment, error) {
	rows, err := q.q.EnrollmentLatest(ctx, workspaceID)
	if err != nil {
		return nil, interpretError("list enrollments", err)
	}
	out := make([]Enrollment, len(rows))
	for i, r := range rows {
		out[i] = enrollmentOf(r.OperatorEnrollment)
		out[i].State = r.EmailState
	}
	return out, nil
}

// Passkey is one of an operator's passkeys; Credential is go-webauthn's
// JSON of it.
type Passkey struct {
	CredentialID []byte
	WorkspaceID  uuid.UUID
	OperatorID   uuid.UUID
	Credential   []byte
	CreatedAt    time.Time
	LastUsedAt   *time.Time // nil until it signs in
}

// PasskeyInsert stores a passkey; a credential id in use is room.ErrConflict.
func (q queries) PasskeyInsert(ctx context.Context, p Passkey) error {
	return interpretError("insert passkey", q.q.PasskeyInsert(ctx, dbsqlc.PasskeyInsertParams{CredentialID: p.CredentialID, WorkspaceID: p.WorkspaceID, OperatorID: p.OperatorID, Credential: p.Credential, CreatedAt: p.CreatedAt}))
}

// PasskeyGet reads a passkey by credential id, or room.ErrNotFound.
func (q queries) PasskeyGet(ctx context.Context, id []byte) (Passkey, error) {
	r, err := q.q.PasskeyGet(ctx, id)
	if err != nil {
		return Passkey{}, interpretError("get passkey", err)
	}
	return Passkey{CredentialID: r.CredentialID, WorkspaceID: r.WorkspaceID, OperatorID: r.OperatorID, Credential: r.Credential, CreatedAt: r.CreatedAt}, nil
}

// PasskeyListForOperator returns an operator's passkeys.
func (q queries) PasskeyListForOperator(ctx context.Context, operatorID uuid.UUID) ([]Passkey, error) {
	rows, err := q.q.PasskeyListForOperator(ctx, operatorID)
	if err != nil {
		return nil, interpretError("list passkeys", err)
	}
	out := make([]Passkey, len(rows))
	for i, r := range rows {
		out[i] = Passkey{CredentialID: r.CredentialID, WorkspaceID: r.WorkspaceID, OperatorID: r.OperatorID, Credential: r.Credential, CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsedAt}
	}
	return out, nil
}

// PasskeyUpdate stores a passkey's credential after a sign-in (its sign
// count and flags move).
func (q queries) PasskeyUpdate(ctx context.Context, id, credential []byte, at time.Time) error {
	return interpretError("update passkey", q.q.PasskeyUpdate(ctx, dbsqlc.PasskeyUpdateParams{CredentialID: id, Credential: credential, LastUsedAt: &at}))
}

// ConsoleSession is a console session with its operator as it is now.
type ConsoleSession struct {
	TokenHash     []byte
	WorkspaceID   uuid.UUID
	WorkspaceName string
	Operator      Operator
	CreatedAt     time.Time
	LastSeenAt    time.Time
}

// ConsoleSessionInsert starts a session.
func (q queries) ConsoleSessionInsert(ctx context.Context, hash []byte, workspaceID, operatorID uuid.UUID, at time.Time) error {
	return interpretError("insert console session", q.q.ConsoleSessionInsert(ctx, dbsqlc.ConsoleSessionInsertParams{TokenHash: hash, WorkspaceID: workspaceID, OperatorID: operatorID, CreatedAt: at}))
}

// ConsoleSessionGet reads a session and its operator, or room.ErrNotFound.
func (q queries) ConsoleSessionGet(ctx context.Context, hash []byte) (ConsoleSession, error) {
	r, err := q.q.ConsoleSessionGet(ctx, hash)
	if err != nil {
		return ConsoleSession{}, interpretError("get console session", err)
	}
	return ConsoleSession{TokenHash: r.TokenHash, WorkspaceID: r.WorkspaceID, WorkspaceName: r.WorkspaceName, CreatedAt: r.CreatedAt, LastSeenAt: r.LastSeenAt,
		Operator: Operator{ID: r.OperatorID, WorkspaceID: r.WorkspaceID, Email: r.Email, DisplayName: r.DisplayName, Role: r.Role, RemovedAt: r.RemovedAt}}, nil
}

// ConsoleSessionTouch records a session's use.
func (q queries) ConsoleSessionTouch(ctx context.Context, hash []byte, at time.Time) error {
	return interpretError("touch console session", q.q.ConsoleSessionTouch(ctx, dbsqlc.ConsoleSessionTouchParams{TokenHash: hash, LastSeenAt: at}))
}

// ConsoleSessionDelete ends a session.
func (q queries) ConsoleSessionDelete(ctx context.Context, hash []byte) error {
	return interpretError("delete console session", q.q.ConsoleSessionDelete(ctx, hash))
}

// ConsoleSweep deletes sessions idle since before idleBefore and
// ceremonies expired before now.
func (q queries) ConsoleSweep(ctx context.Context, idleBefore, now time.Time) error {
	if _, err := q.q.ConsoleSessionDeleteIdle(ctx, idleBefore); err != nil {
		return interpretError("delete idle console sessions", err)
	}
	_, err := q.q.CeremonyDeleteExpired(ctx, now)
	return interpretError("delete expired ceremonies", err)
}

// Ceremony is a WebAuthn ceremony between its begin and finish requests.
type Ceremony struct {
	ID           uuid.UUID
	Kind         string
	EnrollmentID uuid.UUID // zero for a sign-in
	Data         []byte
	ExpiresAt    time.Time
}

// CeremonyInsert stores a ceremony.
func (q queries) CeremonyInsert(ctx context.Context, c Ceremony) error {
	p := dbsqlc.CeremonyInsertParams{ID: c.ID, Kind: c.Kind, Data: c.Data, ExpiresAt: c.ExpiresAt}
	if c.EnrollmentID != uuid.Nil {
		p.EnrollmentID = uuid.NullUUID{UUID: c.EnrollmentID, Valid: true}
	}
	return interpretError("insert ceremony", q.q.CeremonyInsert(ctx, p))
}

// CeremonyTake reads and deletes a ceremony of kind, or room.ErrNotFound.
func (q queries) CeremonyTake(ctx context.Context, id uuid.UUID, kind string) (Ceremony, error) {
	r, err := q.q.CeremonyTake(ctx, dbsqlc.CeremonyTakeParams{ID: id, Kind: kind})
	if err != nil {
		return Ceremony{}, interpretError("take ceremony", err)
	}
	return Ceremony{ID: r.ID, Kind: r.Kind, EnrollmentID: r.EnrollmentID.UUID, Data: r.Data, ExpiresAt: r.ExpiresAt}, nil
}

// AgreementWorkspaces names the workspace of each agreement of ids that
// exists, on the service scope (it serves every workspace's console).
func (s *Store) AgreementWorkspaces(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]uuid.UUID, error) {
	rows, err := s.q.AgreementWorkspaces(ctx, ids)
	if err != nil {
		return nil, interpretError("name agreement workspaces", err)
	}
	out := make(map[uuid.UUID]uuid.UUID, len(rows))
	for _, r := range rows {
		out[r.ID] = r.WorkspaceID
	}
	return out, nil
}

// WorkspaceChannel is the NOTIFY channel of workspace changes that no
// room shows; a payload is one workspace id. db/queries/console.sql names
// it too.
const WorkspaceChannel = "consensus_workspace"

// WorkspaceAnnounce tells every replica, once tx commits, that the
// workspace changed (WorkspaceChannel). Only rare operator actions send
// it: a NOTIFY serializes the commits of every transaction that sends one.
func (tx *Tx) WorkspaceAnnounce(ctx context.Context, workspaceID uuid.UUID) error {
	return interpretError("announce workspace change", tx.q.WorkspaceNotify(ctx, workspaceID.String()))
}
