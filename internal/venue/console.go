package venue

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"sync"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/workspace"
)

// Operators as people: an enrollment link registers a passkey, a passkey
// signs in, and a sign-in starts a console session kept in the database,
// so that it can be ended at once on every replica.
const (
	// EnrollmentTTL is how long an enrollment link works (once).
	EnrollmentTTL = 24 * time.Hour
	// ConsoleIdle ends a console session that made no request for so long.
	ConsoleIdle = 12 * time.Hour
	// ceremonyTTL bounds the time between a ceremony's two requests.
	ceremonyTTL = 5 * time.Minute
	// touchEvery is how often a session's last use is written.
	touchEvery = time.Minute

	// PrefixEnrollment marks an enrollment link's token, PrefixConsole a
	// console session's, so that a leaked one is recognizable.
	PrefixEnrollment = "coe_"
	PrefixConsole    = "coc_"

	ceremonyEnroll = "enroll"
	ceremonySignIn = "signin"
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

// A link that named an operator still present but can no longer enroll
// is refused with its reason: only the holder of the link's secret learns
// it. An unknown link, or one voided by the operator's removal, is
// room.ErrNotFound.
var (
	ErrEnrollmentExpired = errors.New("this enrollment link expired: it works within 24 hours; ask an owner of the workspace for a new one")
	ErrEnrollmentUsed    = errors.New("this enrollment link was used already: it registers one passkey, once; sign in with that passkey, or ask an owner of the workspace for a new link")
)

// ErrLastOwner refuses a change that would leave a workspace without an owner.
var ErrLastOwner = &room.ValidationError{Field: "role", Reason: "a workspace keeps at least one owner: make another operator owner first"}

// EnrollmentLink is where an enrollment token is used: the token travels
// in the fragment, which a browser never sends to a server.
func EnrollmentLink(origin, token string) string { return origin + "/console/enroll#" + token }

// operatorUser is an operator as go-webauthn sees it: the user handle is
// the operator's id, so a passkey names the operator (and its workspace).
type operatorUser struct {
	op    store.Operator
	creds []webauthn.Credential
}

func (u operatorUser) WebAuthnID() []byte { b := u.op.ID; return b[:] }
func (u operatorUser) WebAuthnName() string {
	return u.op.Email
}
func (u operatorUser) WebAuthnDisplayName() string {
	if u.op.DisplayName != "" {
		return u.op.DisplayName
	}
	return u.op.Email
}
func (u operatorUser) WebAuthnCredentials() []webauthn.Credential { return u.creds }

var (
	waMu    sync.Mutex
	waCache = map[string]*webauthn.WebAuthn{}
)

// webAuthn is the relying party of the venue's origin: its host is the
// RP id, and only the origin itself may answer a ceremony.
func (v *Venue) webAuthn() (*webauthn.WebAuthn, error) {
	waMu.Lock()
	defer waMu.Unlock()
	if w := waCache[v.Origin]; w != nil {
		return w, nil
	}
	w, err := webauthn.New(&webauthn.Config{
		RPID: originHost(v.Origin), RPDisplayName: "Consensus", RPOrigins: []string{v.Origin},
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey: protocol.ResidentKeyRequirementRequired, RequireResidentKey: protocol.ResidentKeyRequired(),
			UserVerification: protocol.VerificationPreferred,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("venue: webauthn: %w", err)
	}
	waCache[v.Origin] = w
	return w, nil
}

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

// Ceremony is the first half of a WebAuthn ceremony: its id, which the
// second request names, and the options for navigator.credentials.
type Ceremony struct {
	CeremonyID string          `json:"ceremonyId"`
	PublicKey  json.RawMessage `json:"publicKey"`
	// Operator is who enrolls (enrollment only).
	Operator *OperatorView `json:"operator,omitempty"`
}

// ConsoleSignIn is a console session just started: its token, for the
// cookie only, and who signed in.
type ConsoleSignIn struct {
	Token      string
	OperatorID string
	Call       OperatorCall
}

// enrollmentFor finds the usable link a token names, with its operator:
// ErrEnrollmentUsed or ErrEnrollmentExpired for a link of a present
// operator that can no longer enroll, room.ErrNotFound for anything else.
func (v *Venue) enrollmentFor(ctx context.Context, token string) (store.Enrollment, store.Operator, error) {
	if !strings.HasPrefix(token, PrefixEnrollment) {
		return store.Enrollment{}, store.Operator{}, room.ErrNotFound
	}
	h := secret.Hash(token)
	e, err := v.Store.EnrollmentGetByTokenHash(ctx, h)
	if err != nil {
		return store.Enrollment{}, store.Operator{}, err
	}
	if !secret.Equal(h, e.TokenHash) {
		return store.Enrollment{}, store.Operator{}, room.ErrNotFound
	}
	op, err := v.Store.OperatorGet(ctx, e.OperatorID)
	if err != nil {
		return store.Enrollment{}, store.Operator{}, err
	}
	switch {
	case op.RemovedAt != nil:
		return store.Enrollment{}, store.Operator{}, room.ErrNotFound
	case e.UsedAt != nil:
		return store.Enrollment{}, store.Operator{}, ErrEnrollmentUsed
	case !v.now().Before(e.ExpiresAt):
		return store.Enrollment{}, store.Operator{}, ErrEnrollmentExpired
	}
	return e, op, nil
}

// EnrollBegin starts registering a passkey with an enrollment link.
func (v *Venue) EnrollBegin(ctx context.Context, token string) (*Ceremony, error) {
	e, op, err := v.enrollmentFor(ctx, token)
	if err != nil {
		return nil, err
	}
	wa, err := v.webAuthn()
	if err != nil {
		return nil, err
	}
	creation, sd, err := wa.BeginRegistration(operatorUser{op: op})
	if err != nil {
		return nil, fmt.Errorf("venue: begin registration: %w", err)
	}
	return v.storeCeremony(ctx, ceremonyEnroll, e.ID, sd, creation.Response, &op)
}

func (v *Venue) storeCeremony(ctx context.Context, kind string, enrollment uuid.UUID, sd *webauthn.SessionData, options any, op *store.Operator) (*Ceremony, error) {
	data, err := json.Marshal(sd)
	if err != nil {
		return nil, err
	}
	opts, err := json.Marshal(options)
	if err != nil {
		return nil, err
	}
	c := store.Ceremony{ID: uuid.New(), Kind: kind, EnrollmentID: enrollment, Data: data, ExpiresAt: v.now().Add(ceremonyTTL)}
	if err := v.Store.CeremonyInsert(ctx, c); err != nil {
		return nil, err
	}
	out := &Ceremony{CeremonyID: c.ID.String(), PublicKey: opts}
	if op != nil {
		ov := operatorView(*op, nil, v.now())
		out.Operator = &ov
	}
	return out, nil
}

// takeCeremony reads and ends a ceremony; an unknown, used or expired one
// is ErrUnauthorized.
func (v *Venue) takeCeremony(ctx context.Context, id, kind string) (store.Ceremony, webauthn.SessionData, error) {
	var sd webauthn.SessionData
	u, err := uuid.Parse(id)
	if err != nil {
		return store.Ceremony{}, sd, ErrUnauthorized
	}
	c, err := v.Store.CeremonyTake(ctx, u, kind)
	if errors.Is(err, room.ErrNotFound) || err == nil && !v.now().Before(c.ExpiresAt) {
		return store.Ceremony{}, sd, ErrUnauthorized
	}
	if err != nil {
		return store.Ceremony{}, sd, err
	}
	if err := json.Unmarshal(c.Data, &sd); err != nil {
		return store.Ceremony{}, sd, fmt.Errorf("venue: ceremony: %w", err)
	}
	return c, sd, nil
}

// EnrollFinish registers the passkey the browser created, uses the link,
// and signs the operator in. displayName, when set, becomes the
// operator's. A link used or expired meanwhile is ErrEnrollmentUsed or
// ErrEnrollmentExpired, and nothing is stored; a response that does not
// verify, ErrUnauthorized.
func (v *Venue) EnrollFinish(ctx context.Context, ceremonyID, token, displayName string, credential []byte, c OperatorCall) (*ConsoleSignIn, error) {
	if displayName != "" {
		if err := room.ValidateLine("displayName", displayName, 1, 100); err != nil {
			return nil, err
		}
	}
	e, op, err := v.enrollmentFor(ctx, token)
	if err != nil {
		return nil, err
	}
	cer, sd, err := v.takeCeremony(ctx, ceremonyID, ceremonyEnroll)
	if err != nil {
		return nil, err
	}
	if cer.EnrollmentID != e.ID {
		return nil, ErrUnauthorized
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(credential)
	if err != nil {
		return nil, ErrUnauthorized
	}
	wa, err := v.webAuthn()
	if err != nil {
		return nil, err
	}
	cred, err := wa.CreateCredential(operatorUser{op: op}, sd, parsed)
	if err != nil {
		return nil, ErrUnauthorized
	}
	credJSON, err := json.Marshal(cred)
	if err != nil {
		return nil, err
	}
	now := canon.Now(v.now())
	c.Principal = operatorPrincipal(op)
	out := &ConsoleSignIn{Token: PrefixConsole + secret.Random(32), OperatorID: op.ID.String(), Call: c}
	err = v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		ok, err := tx.EnrollmentUse(ctx, e.ID, now)
		if err != nil {
			return err
		}
		if !ok { // used, or expired, since the check above
			if !now.Before(e.ExpiresAt) {
				return ErrEnrollmentExpired
			}
			return ErrEnrollmentUsed
		}
		if displayName != "" {
			if err := tx.OperatorSetName(ctx, op.ID, displayName); err != nil {
				return err
			}
		}
		if err := tx.PasskeyInsert(ctx, store.Passkey{CredentialID: cred.ID, WorkspaceID: op.WorkspaceID, OperatorID: op.ID, Credential: credJSON, CreatedAt: now}); err != nil {
			return err
		}
		if err := tx.ConsoleSessionInsert(ctx, secret.Hash(out.Token), op.WorkspaceID, op.ID, now); err != nil {
			return err
		}
		return v.audited(ctx, tx, c, ActionOperatorEnroll, map[string]string{"operatorId": op.ID.String()})
	})
	if err != nil {
		return nil, fmt.Errorf("venue: enroll: %w", err)
	}
	return out, nil
}

func operatorPrincipal(op store.Operator) workspace.Principal {
	name := op.Email
	if op.DisplayName != "" {
		name = op.DisplayName + " <" + op.Email + ">"
	}
	return workspace.Principal{WorkspaceID: op.WorkspaceID, Actor: workspace.Actor{Kind: workspace.ActorOperator, ID: op.ID.String(), Name: name}, Scopes: workspace.RoleScopes(op.Role)}
}

// SignInBegin starts a sign-in with any passkey of this origin (a
// discoverable credential: the operator is not asked who they are).
func (v *Venue) SignInBegin(ctx context.Context) (*Ceremony, error) {
	wa, err := v.webAuthn()
	if err != nil {
		return nil, err
	}
	assertion, sd, err := wa.BeginDiscoverableLogin()
	if err != nil {
		return nil, fmt.Errorf("venue: begin sign-in: %w", err)
	}
	return v.storeCeremony(ctx, ceremonySignIn, uuid.Nil, sd, assertion.Response, nil)
}

// SignInFinish checks the browser's assertion and starts a session. Every
// refusal is ErrUnauthorized; one for a known passkey is recorded in its
// workspace's audit log.
func (v *Venue) SignInFinish(ctx context.Context, ceremonyID string, credential []byte, c OperatorCall) (*ConsoleSignIn, error) {
	_, sd, err := v.takeCeremony(ctx, ceremonyID, ceremonySignIn)
	if err != nil {
		return nil, err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(credential)
	if err != nil {
		return nil, ErrUnauthorized
	}
	wa, err := v.webAuthn()
	if err != nil {
		return nil, err
	}
	var found *store.Operator
	var dbErr error
	user, cred, err := wa.ValidatePasskeyLogin(func(rawID, userHandle []byte) (webauthn.User, error) {
		pk, err := v.Store.PasskeyGet(ctx, rawID)
		if err != nil {
			dbErr = err
			return nil, err
		}
		op, err := v.Store.OperatorGet(ctx, pk.OperatorID)
		if err != nil {
			dbErr = err
			return nil, err
		}
		found = &op
		if op.RemovedAt != nil || string(userHandle) != string(op.ID[:]) {
			return nil, ErrUnauthorized
		}
		pks, err := v.Store.PasskeyListForOperator(ctx, op.ID)
		if err != nil {
			dbErr = err
			return nil, err
		}
		u := operatorUser{op: op}
		for _, p := range pks {
			var wc webauthn.Credential
			if json.Unmarshal(p.Credential, &wc) == nil {
				u.creds = append(u.creds, wc)
			}
		}
		return u, nil
	}, sd, parsed)
	if dbErr != nil && !errors.Is(dbErr, room.ErrNotFound) {
		return nil, dbErr
	}
	if err != nil {
		if found != nil {
			c.Principal = operatorPrincipal(*found)
			_ = v.RecordRefusal(ctx, c, ActionOperatorSignIn, map[string]string{"operatorId": found.ID.String()}, "unauthorized")
		}
		return nil, ErrUnauthorized
	}
	op := user.(operatorUser).op
	credJSON, err := json.Marshal(cred)
	if err != nil {
		return nil, err
	}
	now := canon.Now(v.now())
	c.Principal = operatorPrincipal(op)
	out := &ConsoleSignIn{Token: PrefixConsole + secret.Random(32), OperatorID: op.ID.String(), Call: c}
	err = v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		if err := tx.PasskeyUpdate(ctx, cred.ID, credJSON, now); err != nil {
			return err
		}
		if err := tx.ConsoleSessionInsert(ctx, secret.Hash(out.Token), op.WorkspaceID, op.ID, now); err != nil {
			return err
		}
		return v.audited(ctx, tx, c, ActionOperatorSignIn, map[string]string{"operatorId": op.ID.String()})
	})
	if err != nil {
		return nil, fmt.Errorf("venue: sign in: %w", err)
	}
	return out, nil
}

// ConsoleSession is a signed-in console request: the call it makes and
// what the console shows of who makes it.
type ConsoleSession struct {
	Call          OperatorCall
	Operator      OperatorView
	WorkspaceName string
	TokenHash     []byte
}

// AuthConsole resolves a console session token. It reads the database on
// every request, so a removal, a change of role or a sign-out counts at
// once on every replica. A session idle for ConsoleIdle ends. Anything
// but a live session is ErrUnauthorized.
func (v *Venue) AuthConsole(ctx context.Context, token string) (*ConsoleSession, error) {
	if !strings.HasPrefix(token, PrefixConsole) {
		return nil, ErrUnauthorized
	}
	h := secret.Hash(token)
	s, err := v.Store.ConsoleSessionGet(ctx, h)
	if errors.Is(err, room.ErrNotFound) {
		return nil, ErrUnauthorized
	}
	if err != nil {
		return nil, err
	}
	if !secret.Equal(h, s.TokenHash) || s.Operator.RemovedAt != nil {
		return nil, ErrUnauthorized
	}
	now := v.now()
	if now.Sub(s.LastSeenAt) >= ConsoleIdle {
		if err := v.Store.ConsoleSessionDelete(ctx, h); err != nil {
			return nil, err
		}
		return nil, ErrUnauthorized
	}
	if now.Sub(s.LastSeenAt) >= touchEvery {
		if err := v.Store.ConsoleSessionTouch(ctx, h, canon.Now(now)); err != nil {
			return nil, err
		}
	}
	return &ConsoleSession{Call: OperatorCall{Principal: operatorPrincipal(s.Operator)}, Operator: operatorView(s.Operator, nil, now),
		WorkspaceName: s.WorkspaceName, TokenHash: h}, nil
}

// SignOut ends a console session and records it.
func (v *Venue) SignOut(ctx context.Context, s *ConsoleSession, c OperatorCall) error {
	err := v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		if err := tx.ConsoleSessionDelete(ctx, s.TokenHash); err != nil {
			return err
		}
		return v.audited(ctx, tx, c, ActionOperatorSignOut, map[string]string{"operatorId": s.Operator.ID})
	})
	if err != nil {
		return fmt.Errorf("venue: sign out: %w", err)
	}
	return nil
}

// ConsoleSweep deletes idle console sessions and expired ceremonies.
func (v *Venue) ConsoleSweep(ctx context.Context) error {
	now := v.now()
	return v.Store.ConsoleSweep(ctx, now.Add(-ConsoleIdle), now)
}

// AgreementTerms is an agreement's current revision as the console shows
// it: the canonical object (what the revision digest covers) and its
// CONSENSUS.md text (what the markdown digest covers).
type AgreementTerms struct {
	Revision json.RawMessage `json:"revision"`
	Markdown string          `json:"markdown"`
}

// GetAgreementTerms reads the current revision of an agreement of the
// call's workspace; another workspace's is room.ErrNotFound.
func (v *Venue) GetAgreementTerms(ctx context.Context, c OperatorCall, agreementID string) (*AgreementTerms, error) {
	id, err := parseID(agreementID)
	if err != nil {
		return nil, err
	}
	var out AgreementTerms
	err = v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		a, err := tx.AgreementGet(ctx, id)
		if err != nil {
			return err
		}
		if err := ownedBy(c, a.WorkspaceID); err != nil {
			return err
		}
		rev, err := tx.RevisionGet(ctx, id, a.CurrentRevision)
		if err != nil {
			return err
		}
		out = AgreementTerms{Revision: json.RawMessage(rev.Canonical), Markdown: rev.Markdown}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ConsoleAgreement is one line of the console's agreement list: the
// operator's summary and, while the outcome is pending, who it waits for.
type ConsoleAgreement struct {
	AgreementSummary
	// WaitsFor names the required participants, not revoked, without a
	// decision on the current revision; empty while pending means the
	// decision rule itself (a quorum not yet met by those who decided).
	WaitsFor []string `json:"waitsFor"`
}

// ConsoleAgreementPage is a page of the console's list, newest first.
type ConsoleAgreementPage struct {
	Agreements []ConsoleAgreement `json:"agreements"`
	NextCursor *string            `json:"nextCursor"`
}

// ConsoleAgreements reads a page of the call's workspace's agreements and
// its tag: a digest of what the page shows and of each agreement's
// version, which moves with every event, claim, revocation and amendment,
// so the tag changes whenever any line would. With full unset only the
// tag is computed (one statement), for a held read to compare.
func (v *Venue) ConsoleAgreements(ctx context.Context, c OperatorCall, limit int, cursor string, full bool) (*ConsoleAgreementPage, string, error) {
	page, shown, err := v.listAgreements(ctx, c, limit, cursor)
	if err != nil {
		return nil, "", err
	}
	type line struct {
		AgreementSummary
		Version int64 `json:"v"`
	}
	lines := make([]line, len(shown))
	for i := range shown {
		lines[i] = line{page.Agreements[i], shown[i].Version}
	}
	b, err := json.Marshal(struct {
		L []line  `json:"l"`
		N *string `json:"n"`
	}{lines, page.NextCursor})
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(b)
	tag := `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
	if !full {
		return nil, tag, nil
	}
	waits, err := v.waitingFor(ctx, c, shown)
	if err != nil {
		return nil, "", err
	}
	out := &ConsoleAgreementPage{Agreements: make([]ConsoleAgreement, len(page.Agreements)), NextCursor: page.NextCursor}
	for i, a := range page.Agreements {
		out.Agreements[i] = ConsoleAgreement{AgreementSummary: a, WaitsFor: waits[shown[i].ID]}
		if out.Agreements[i].WaitsFor == nil {
			out.Agreements[i].WaitsFor = []string{}
		}
	}
	return out, tag, nil
}

// waitingFor names, for each pending agreement of agreements, the required
// participants, not revoked, whose decision does not count on the current
// revision (none, or one made stale by an amendment), in roster order. It
// reads only what the decision rule needs (the current revision with its
// history, the roster), all in one transaction.
func (v *Venue) waitingFor(ctx context.Context, c OperatorCall, agreements []store.Agreement) (map[uuid.UUID][]string, error) {
	out := map[uuid.UUID][]string{}
	err := v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		clear(out) // a retried transaction starts again
		for _, a := range agreements {
			if a.Outcome.Status != room.StatusPending {
				continue
			}
			rev, err := tx.RevisionGet(ctx, a.ID, a.CurrentRevision)
			if err != nil {
				return err
			}
			if rev.History, err = tx.RevisionList(ctx, a.ID); err != nil {
				return err
			}
			roster, err := tx.ParticipantRoster(ctx, a.ID)
			if err != nil {
				return err
			}
			rule, err := ruleOf(a, rev, roster)
			if err != nil {
				return err
			}
			decisions := countedDecisions(rule)
			for _, p := range roster {
				if _, decided := decisions[p.ID]; p.Required && p.RevokedAt == nil && !decided {
					out[a.ID] = append(out[a.ID], p.DisplayName)
				}
			}
		}
		return nil
	})
	return out, err
}

// ConsoleRecord is Record for an operator: the signed record of an
// agreement of the call's workspace, once its outcome is final
// (ErrRecordNotReady before); another workspace's is room.ErrNotFound.
func (v *Venue) ConsoleRecord(ctx context.Context, c OperatorCall, agreementID string) (*store.Record, error) {
	id, err := parseID(agreementID)
	if err != nil {
		return nil, err
	}
	var a store.Agreement
	err = v.inWorkspace(ctx, c, func(tx *store.Tx) (err error) {
		if a, err = tx.AgreementGet(ctx, id); err != nil {
			return err
		}
		return ownedBy(c, a.WorkspaceID)
	})
	if err != nil {
		return nil, err
	}
	return v.Record(ctx, &Principal{AgreementID: a.ID, Deadline: a.Deadline, OutcomeStatus: a.Outcome.Status, Version: a.Version, CurrentRevision: a.CurrentRevision})
}
