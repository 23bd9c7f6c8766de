package venue

import (
	"context"
	"fmt"
	"net/mail"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/workspace"
)

// Operators as people: an enrollment link registers a passkey, a passkey
// signs in, and a sign-in starts a console session kept in the database,
// so that it can be ended at once on every replica. An owner manages the
// workspace's operators here; console_passkeys.go holds the WebAuthn
// ceremonies, console_sessions.go the sessions, console_views.go what the
// console reads.
const (
	// EnrollmentTTL is how long an enrollment link works (once).
	EnrollmentTTL = 24 * time.Hour
	// PrefixEnrollment marks an enrollment link's token, so that a leaked
	// one is recognizable.
	PrefixEnrollment = "coe_"
)

// The audit actions of operators as people.
const (
	ActionOperatorInvite  = "operator.invite"
	ActionOperatorRole    = "operator.role"
	ActionOperatorRemove  = "operator.remove"
	ActionOperatorList    = "operator.list"
	ActionOperatorEnroll  = "operator.enroll"
	ActionOperatorSignIn  = "operator.signin"
	ActionOperatorSignOut = "operator.signout"
	ActionSessionRead     = "session.read"
)

// ErrLastOwner refuses a change that would leave a workspace without an owner.
var ErrLastOwner = &room.ValidationError{Field: "role", Reason: "a workspace keeps at least one owner: make another operator owner first"}

// EnrollmentLink is where an enrollment token is used: the token travels
// in the fragment, which a browser never sends to a server.
func EnrollmentLink(origin, token string) string { return origin + "/console/enroll#" + token }

// newEnrollment builds a link for op; with send, its email too.
func (v *Venue) newEnrollment(op store.Operator, workspaceName string, send bool, now time.Time) (store.Enrollment, string) {
	token := PrefixEnrollment + secret.Random(32)
	e := store.Enrollment{ID: uuid.New(), WorkspaceID: op.WorkspaceID, OperatorID: op.ID, TokenHash: secret.Hash(token), CreatedAt: now, ExpiresAt: now.Add(EnrollmentTTL)}
	link := EnrollmentLink(v.Origin, token)
	if send {
		e.Recipient = op.Email
		e.Subject = "Consensus: sign in to the console of " + workspaceName
		e.MessageID = e.ID.String() + "@" + originHost(v.Origin)
		body := fmt.Sprintf("You were made %s of the workspace %q on %s.\n\n"+
			"Open this link within 24 hours to register a passkey for the console. It works once; no password is involved:\n\n%s\n\n"+
			"If you did not expect this, ignore this email: nothing happens unless the link is opened.\n",
			op.Role, workspaceName, v.Origin, link)
		e.SealedBody = v.Keys.Seal([]byte(body), e.ID[:])
	}
	return e, link
}

// OperatorView is an operator as the console shows it.
type OperatorView struct {
	ID          string  `json:"id"`
	Email       string  `json:"email"`
	DisplayName string  `json:"displayName"`
	Role        string  `json:"role"`
	CreatedAt   string  `json:"createdAt"`
	RemovedAt   *string `json:"removedAt"`
	// Enrollment is the state of the newest link: none, queued, sent,
	// retrying, failed, printed (not emailed), used or expired.
	Enrollment string `json:"enrollment"`
}

func operatorView(o store.Operator, e *store.Enrollment, now time.Time) OperatorView {
	out := OperatorView{ID: o.ID.String(), Email: o.Email, DisplayName: o.DisplayName, Role: o.Role, CreatedAt: canon.FormatTime(o.CreatedAt), Enrollment: "none"}
	if o.RemovedAt != nil {
		out.RemovedAt = ptr(canon.FormatTime(*o.RemovedAt))
	}
	if e != nil {
		switch {
		case e.UsedAt != nil:
			out.Enrollment = "used"
		case !now.Before(e.ExpiresAt):
			out.Enrollment = "expired"
		case e.State != "":
			out.Enrollment = e.State
		default:
			out.Enrollment = "printed"
		}
	}
	return out
}

// OperatorList is a workspace's operators, removed ones included.
type OperatorList struct {
	Operators []OperatorView `json:"operators"`
}

// ListOperators lists the call's workspace's operators.
func (v *Venue) ListOperators(ctx context.Context, c OperatorCall) (*OperatorList, error) {
	out := &OperatorList{Operators: []OperatorView{}}
	now := v.now()
	err := v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		ops, err := tx.OperatorListAll(ctx, c.WorkspaceID)
		if err != nil {
			return err
		}
		es, err := tx.EnrollmentLatest(ctx, c.WorkspaceID)
		if err != nil {
			return err
		}
		latest := map[uuid.UUID]*store.Enrollment{}
		for i := range es {
			latest[es[i].OperatorID] = &es[i]
		}
		out.Operators = out.Operators[:0]
		for _, o := range ops {
			out.Operators = append(out.Operators, operatorView(o, latest[o.ID], now))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("venue: list operators: %w", err)
	}
	return out, nil
}

// OperatorInput invites an operator.
type OperatorInput struct {
	Email       string `json:"email"`
	DisplayName string `json:"displayName"`
	Role        string `json:"role"`
}

// RoleInput changes an operator's role.
type RoleInput struct {
	Role string `json:"role"`
}

func checkRole(role string) error {
	if workspace.RoleScopes(role) == nil {
		return &room.ValidationError{Field: "role", Reason: "must be owner, operator or viewer"}
	}
	return nil
}

// InviteOperator adds an operator to the call's workspace and queues the
// email of its enrollment link, in one transaction with its audit entry.
// An address already in use is room.ErrConflict.
func (v *Venue) InviteOperator(ctx context.Context, c OperatorCall, in OperatorInput) (*OperatorView, error) {
	email := workspace.NormalizeEmail(in.Email)
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || a.Name != "" {
		return nil, &room.ValidationError{Field: "email", Reason: "must be one email address, such as someone@example.com"}
	}
	if in.DisplayName != "" {
		if err := room.ValidateLine("displayName", in.DisplayName, 1, 100); err != nil {
			return nil, err
		}
	}
	if err := checkRole(in.Role); err != nil {
		return nil, err
	}
	now := canon.Now(v.now())
	op := store.Operator{ID: uuid.New(), WorkspaceID: c.WorkspaceID, Email: email, Role: in.Role, CreatedAt: now, DisplayName: in.DisplayName}
	var out OperatorView
	err := v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		ws, err := tx.WorkspaceGet(ctx, c.WorkspaceID)
		if err != nil {
			return err
		}
		if err := tx.OperatorInsertNamed(ctx, op); err != nil {
			return err
		}
		e, _ := v.newEnrollment(op, ws.Name, true, now)
		if err := tx.EnrollmentInsert(ctx, e); err != nil {
			return err
		}
		out = operatorView(op, &e, now)
		return v.audited(ctx, tx, c, ActionOperatorInvite, map[string]string{"operatorId": op.ID.String()})
	})
	if err != nil {
		return nil, fmt.Errorf("venue: invite operator: %w", err)
	}
	return &out, nil
}

// SetOperatorRole changes an operator's role; the last owner cannot stop
// being one (ErrLastOwner).
func (v *Venue) SetOperatorRole(ctx context.Context, c OperatorCall, id string, in RoleInput) (*OperatorView, error) {
	opID, err := parseID(id)
	if err != nil {
		return nil, err
	}
	if err := checkRole(in.Role); err != nil {
		return nil, err
	}
	var out OperatorView
	err = v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		o, err := tx.OperatorSetRole(ctx, c.WorkspaceID, opID, in.Role)
		if err != nil {
			return err
		}
		if n, err := tx.OperatorOwnerCount(ctx, c.WorkspaceID); err != nil {
			return err
		} else if n == 0 {
			return ErrLastOwner
		}
		out = operatorView(o, nil, v.now())
		if err := tx.WorkspaceAnnounce(ctx, c.WorkspaceID); err != nil {
			return err
		}
		return v.audited(ctx, tx, c, ActionOperatorRole, map[string]string{"operatorId": id, "role": in.Role})
	})
	if err != nil {
		return nil, fmt.Errorf("venue: set operator role: %w", err)
	}
	return &out, nil
}

// RemoveOperator removes an operator: its sessions end and its unused
// links stop working in the same transaction, and since every console
// request reads its session from the database, its next request on any
// replica is refused.
func (v *Venue) RemoveOperator(ctx context.Context, c OperatorCall, id string) (*OperatorView, error) {
	opID, err := parseID(id)
	if err != nil {
		return nil, err
	}
	var out OperatorView
	err = v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		o, err := tx.OperatorRemove(ctx, c.WorkspaceID, opID, canon.Now(v.now()))
		if err != nil {
			return err
		}
		if n, err := tx.OperatorOwnerCount(ctx, c.WorkspaceID); err != nil {
			return err
		} else if n == 0 {
			return ErrLastOwner
		}
		out = operatorView(o, nil, v.now())
		// Its consoles' held reads wake on every replica and find the
		// session ended.
		if err := tx.WorkspaceAnnounce(ctx, c.WorkspaceID); err != nil {
			return err
		}
		return v.audited(ctx, tx, c, ActionOperatorRemove, map[string]string{"operatorId": id})
	})
	if err != nil {
		return nil, fmt.Errorf("venue: remove operator: %w", err)
	}
	return &out, nil
}
